import { stepTimeout } from '../domain/fair-share.js';
import { settleUnused } from '../lifecycle/outcomes.js';
import { moveRevision } from '../lifecycle/revisions.js';
import { insertBerthAuditRow } from '../store/repositories/audit.js';
import { findListenerById } from '../store/repositories/listeners.js';
import { handedOverRevisions, handoverTimes } from '../store/repositories/revisions.js';
import type { EngineDeps, EngineSettings } from './context.js';

/**
 * Fails the revisions handed to a listener that did not report DEPLOYED within the deploy
 * timeout (the deployment's `deploy_timeout_seconds`, else the engine's), counted from the
 * handover. The engine never claims such a deployment for this: a sweep looks at the
 * handed-over revisions alone, so waiting on a listener costs no claims. Several engines
 * may sweep at once; the compare-and-set lets one of them fail each revision.
 */
export async function failOverdueHandovers(
  deps: Pick<EngineDeps, 'db' | 'bus'>,
  settings: Pick<EngineSettings, 'deployTimeoutMs' | 'maxDeployTimeoutSeconds' | 'workerId'>,
  now = Date.now(),
): Promise<number> {
  const handedOver = await handedOverRevisions(deps.db);
  if (handedOver.length === 0) return 0;
  const since = await handoverTimes(
    deps.db,
    handedOver.map((r) => r.id),
  );
  let failed = 0;
  for (const revision of handedOver) {
    const timeoutMs = stepTimeout(revision.deployment_deploy_timeout_seconds, settings.deployTimeoutMs, settings.maxDeployTimeoutSeconds).ms;
    const handedAt = Date.parse(since.get(revision.id) ?? revision.updated_at);
    if (now - handedAt < timeoutMs) continue;
    const listener = await findListenerById(deps.db, revision.listener_id);
    const lastSeen = listener?.last_seen_at ? `last seen ${listener.last_seen_at}` : 'never seen';
    const fence = { kind: 'listener' as const, listenerId: revision.listener_id };
    const silence = `listener ${revision.listener_id} did not report DEPLOYED within ${Math.round(timeoutMs / 1000)} s`;
    const result = await moveRevision(deps, revision, 'DEPLOY_FAILED', {
      message: `Deploy failed: ${silence}; ${lastSeen}.`,
      fence,
      origin: settings.workerId,
      alongside: async (trx) => {
        // Berth gave up on the revision, not a person: its own audit row.
        const target = { type: 'revision', id: revision.id, name: null };
        await insertBerthAuditRow(trx, { deploymentId: revision.deployment_id }, { action: 'revision.interrupt', target, reason: silence });
        await settleUnused(deps, revision.deployment_id, { fence }, trx);
      },
    });
    if (result.outcome === 'ok') {
      failed += 1;
      // A revision queued behind this one may run now.
      deps.bus.publish({ topic: 'work', deploymentId: revision.deployment_id });
    }
  }
  return failed;
}
