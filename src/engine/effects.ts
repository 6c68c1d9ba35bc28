import type { RevisionStatus } from '../domain/revision-status.js';
import { announce, type LogType, recordLog } from '../events/recorder.js';
import { moveDeployment } from '../lifecycle/deployments.js';
import { moveRevision as lifecycleMove } from '../lifecycle/revisions.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import type { RevisionRecord, TransitionSet } from '../store/repositories/revisions.js';
import type { WorkContext } from './context.js';

/**
 * Moves a revision to its next status through the lifecycle, fenced by our lease, and
 * keeps the in-memory record in step. False: someone else moved it first, or our lease
 * is gone; either way the worker re-reads and decides again.
 */
export async function moveRevision(
  ctx: WorkContext,
  revision: RevisionRecord,
  to: RevisionStatus,
  message: string | null,
  set?: TransitionSet,
): Promise<boolean> {
  const result = await lifecycleMove(ctx, revision, to, { message, fence: leaseFence(ctx), set, origin: ctx.settings.workerId });
  if (result.outcome !== 'ok') return false;
  Object.assign(revision, set ?? {}, { status: to, status_message: message, updated_at: result.at });
  return true;
}

export async function writeLog(ctx: WorkContext, revision: RevisionRecord, logType: LogType, level: string, message: string): Promise<void> {
  await recordLog(ctx.db, { deploymentId: revision.deployment_id, revisionId: revision.id, logType, level, message });
  announce(ctx.bus, revision.deployment_id, ctx.settings.workerId);
}

/**
 * DEPLOYING → DEPLOYED, and the deployment now serves this revision: one transaction, so
 * `active_revision_id` never names a revision that is not DEPLOYED. A deployment being
 * deleted meanwhile stays AWAITING_DELETE (the move to READY finds it in no status that
 * leads there), so the delete is not lost.
 */
export async function markDeployed(
  ctx: WorkContext,
  deployment: DeploymentRecord,
  revision: RevisionRecord,
  running: { url: string; handle: string },
): Promise<boolean> {
  // custom_url is the user's to set (e.g. a proxy in front); fill it only when empty.
  const sourceConfig = { ...deployment.source_config };
  if (!sourceConfig.custom_url || sourceConfig.custom_url === deployment.url) sourceConfig.custom_url = running.url;
  const message = `Serving at ${running.url}.`;
  const set = { url: running.url, runtime_handle: running.handle };
  const result = await lifecycleMove(ctx, revision, 'DEPLOYED', {
    message,
    fence: leaseFence(ctx),
    set,
    origin: ctx.settings.workerId,
    alongside: async (trx) => {
      await moveDeployment(
        ctx,
        deployment.id,
        'READY',
        { fence: leaseFence(ctx), set: { active_revision_id: revision.id, url: running.url, source_config: sourceConfig } },
        trx,
      );
    },
  });
  if (result.outcome !== 'ok') return false;
  Object.assign(revision, set, { status: 'DEPLOYED', status_message: message, updated_at: result.at });
  Object.assign(deployment, { active_revision_id: revision.id, url: running.url, source_config: sourceConfig });
  return true;
}

export function leaseFence(ctx: WorkContext) {
  return { kind: 'lease' as const, worker: ctx.settings.workerId };
}
