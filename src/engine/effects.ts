import { announce, type LogType, recordLog, recordStatus } from '../events/recorder.js';
import { canTransition, type RevisionStatus } from '../domain/revision-status.js';
import { nowIso } from '../store/database.js';
import type { DeploymentRow } from '../store/repositories/deployments.js';
import { type RevisionRow, type Transition, transitionRevision } from '../store/repositories/revisions.js';
import type { WorkContext } from './context.js';

/**
 * Moves a revision to its next status, fenced by our lease, and records the change in the
 * deployment's event stream in the same transaction. False: someone else moved it first.
 */
export async function moveRevision(
  ctx: WorkContext,
  revision: RevisionRow,
  to: RevisionStatus,
  message: string | null,
  set?: Transition['set'],
): Promise<boolean> {
  // The same status again only updates the message (a revision handed to a listener).
  if (to !== revision.status && !canTransition(revision.status, to)) {
    throw new Error(`revision ${revision.id}: ${revision.status} → ${to} is not an allowed transition`);
  }
  const now = nowIso();
  const moved = await ctx.db.transaction().execute(async (trx) => {
    const ok = await transitionRevision(trx, {
      revisionId: revision.id,
      deploymentId: revision.deployment_id,
      from: revision.status,
      to,
      message,
      worker: ctx.settings.workerId,
      now,
      set,
    });
    if (ok) await recordStatus(trx, { deploymentId: revision.deployment_id, revisionId: revision.id, status: to, message, at: now });
    return ok;
  });
  if (moved) {
    Object.assign(revision, set ?? {}, { status: to, status_message: message, updated_at: now });
    announce(ctx.bus, revision.deployment_id, ctx.settings.workerId);
  }
  return moved;
}

export async function writeLog(ctx: WorkContext, revision: RevisionRow, logType: LogType, level: string, message: string): Promise<void> {
  await recordLog(ctx.db, { deploymentId: revision.deployment_id, revisionId: revision.id, logType, level, message });
  announce(ctx.bus, revision.deployment_id, ctx.settings.workerId);
}

/**
 * DEPLOYING → DEPLOYED, and the deployment now serves this revision: one transaction, so
 * `active_revision_id` never names a revision that is not DEPLOYED.
 */
export async function markDeployed(
  ctx: WorkContext,
  deployment: DeploymentRow,
  revision: RevisionRow,
  running: { url: string; handle: string },
): Promise<boolean> {
  const now = nowIso();
  const message = `Serving at ${running.url}.`;
  const moved = await ctx.db.transaction().execute(async (trx) => {
    const ok = await transitionRevision(trx, {
      revisionId: revision.id,
      deploymentId: deployment.id,
      from: 'DEPLOYING',
      to: 'DEPLOYED',
      message,
      worker: ctx.settings.workerId,
      now,
      set: { url: running.url, runtime_handle: running.handle },
    });
    if (!ok) return false;
    const sourceConfig = JSON.parse(deployment.source_config) as { custom_url: string | null };
    // custom_url is the user's to set (e.g. a proxy in front); fill it only when empty.
    if (!sourceConfig.custom_url || sourceConfig.custom_url === deployment.url) sourceConfig.custom_url = running.url;
    await trx
      .updateTable('deployments')
      .set({ active_revision_id: revision.id, url: running.url, status: 'READY', source_config: JSON.stringify(sourceConfig), updated_at: now })
      .where('id', '=', deployment.id)
      .execute();
    await recordStatus(trx, { deploymentId: deployment.id, revisionId: revision.id, status: 'DEPLOYED', message, at: now });
    return true;
  });
  if (moved) announce(ctx.bus, deployment.id, ctx.settings.workerId);
  return moved;
}
