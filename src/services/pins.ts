import { pinAfterRedeploy } from '../domain/pins.js';
import { deploymentNotFound } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { announce } from '../events/recorder.js';
import { type Executor, nowIso } from '../store/database.js';
import * as deployments from '../store/repositories/deployments.js';
import type { DeploymentView } from '../contract/deployments.js';
import { recordChange } from './audit.js';
import { deploymentView } from './deployment-records.js';
import type { DeploymentServiceDeps } from './index.js';

/** The fields a pin or an unpin changes, as the audit log names them. */
export const PIN_FIELDS = ['pinned_at', 'pinned_revision_id'] as const;

/**
 * Compare-and-set of the pin on a row read under its lock, keeping the in-memory row in
 * step. The lock makes a lost race impossible; should one happen all the same (a caller
 * that read the row without it), the transaction fails rather than writing over a pin.
 */
async function movePin(trx: Executor, row: deployments.DeploymentRecord, next: { revisionId: string; at: string } | null): Promise<void> {
  if (!(await deployments.setPin(trx, row.id, row.pinned_revision_id, next))) {
    throw new Error(`The pin of deployment ${row.id} changed under its row lock.`);
  }
  row.pinned_revision_id = next?.revisionId ?? null;
  row.pinned_at = next?.at ?? null;
}

/**
 * An explicit change that makes a revision (PATCH, POST revisions) follows the branch
 * again: it clears the pin. True when there was one, for the audit row's fields.
 */
export async function unpinForExplicitRevision(trx: Executor, row: deployments.DeploymentRecord): Promise<boolean> {
  if (row.pinned_revision_id === null) return false;
  await movePin(trx, row, null);
  return true;
}

/**
 * After a redeploy of `redeployedId` made `createdId` (call before appendRevision moves
 * the row's latest revision): pins the deployment when that was a rollback
 * (domain/pins.ts), with its own audit row `deployment.pin`.
 */
export async function pinForRedeploy(
  trx: Executor,
  scope: WorkspaceScope,
  row: deployments.DeploymentRecord,
  redeployedId: string,
  createdId: string,
  now: string,
): Promise<void> {
  const next = pinAfterRedeploy(row, redeployedId, createdId, now);
  if (next === null) return;
  await movePin(trx, row, next);
  await recordChange(trx, scope, { action: 'deployment.pin', target: { type: 'deployment', id: row.id, name: row.name }, changedFields: [...PIN_FIELDS] });
}

/**
 * POST …/unpin: clears the pin, so build on push follows the branch again (the next push
 * builds; pushes ignored meanwhile are not replayed). Idempotent: unpinning a deployment
 * that is not pinned changes nothing, writes no audit row, and answers it as it is.
 */
export async function unpinDeployment(
  { db, records, bus }: Pick<DeploymentServiceDeps, 'db' | 'records' | 'bus'>,
  scope: WorkspaceScope,
  id: string,
): Promise<DeploymentView> {
  const { view, changed } = await db.transaction().execute(async (trx) => {
    const row = await deployments.lockDeploymentAsIs(trx, scope.workspaceId, id);
    if (!row) throw deploymentNotFound(id);
    const changed = row.pinned_revision_id !== null;
    if (changed) {
      await movePin(trx, row, null);
      row.updated_at = nowIso();
      await deployments.updateDeployment(trx, id, { updated_at: row.updated_at });
      await recordChange(trx, scope, { action: 'deployment.unpin', target: { type: 'deployment', id, name: row.name }, changedFields: [...PIN_FIELDS] });
    }
    const current = await records.withLatest(trx, row);
    return { view: deploymentView(row, current.latest, (await records.state(trx, current)).secrets), changed };
  });
  if (changed) announce(bus, id);
  return view;
}
