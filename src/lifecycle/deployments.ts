import { type DeploymentStatus, deploymentStatusesLeadingTo } from '../domain/deployment-status.js';
import { announce, announceListener } from '../events/recorder.js';
import { bumpGenerationOfDeployment } from '../store/repositories/listeners.js';
import { type Executor, nowIso } from '../store/database.js';
import { compareAndSetDeploymentStatus, type DeploymentRecord } from '../store/repositories/deployments.js';
import type { LifecycleDeps } from './revisions.js';

export type DeploymentFence = { kind: 'api' } | { kind: 'lease'; worker: string } | { kind: 'listener'; listenerId: string };

export interface DeploymentMove {
  fence: DeploymentFence;
  /** What the new status brings along (the revision now serving, its URL …). */
  set?: Partial<Pick<DeploymentRecord, 'active_revision_id' | 'url' | 'source_config'>>;
  /** Only while no revision serves. */
  requireInactive?: boolean;
  origin?: string;
  /** More writes that belong to the same change (its audit row), run in its transaction only if it succeeds. */
  alongside?: (trx: Executor) => Promise<void>;
}

/**
 * The only way a deployment's status changes: a compare-and-set from every status the
 * transition table allows to lead to `to`, under the writer's fence. Inside a caller's
 * transaction (`trx`) the caller announces after commit; with the plain database this
 * announces at once. False when the deployment was not in such a status (or the fence
 * failed): another writer got there first.
 */
export async function moveDeployment(deps: LifecycleDeps, deploymentId: string, to: DeploymentStatus, move: DeploymentMove, trx?: Executor): Promise<boolean> {
  const change = async (db: Executor) => {
    const moved = await compareAndSetDeploymentStatus(db, {
      id: deploymentId,
      from: deploymentStatusesLeadingTo(to),
      to,
      now: nowIso(),
      leaseOwner: move.fence.kind === 'lease' ? move.fence.worker : undefined,
      listenerId: move.fence.kind === 'listener' ? move.fence.listenerId : undefined,
      set: move.set,
      requireInactive: move.requireInactive,
    });
    // A placed deployment being deleted moves to its listener's deletions.
    const listenerId = moved && to === 'AWAITING_DELETE' ? await bumpGenerationOfDeployment(db, deploymentId) : undefined;
    if (moved) await move.alongside?.(db);
    return { moved, listenerId };
  };
  if (trx) return (await change(trx)).moved;
  const { moved, listenerId } = to === 'AWAITING_DELETE' || move.alongside ? await deps.db.transaction().execute(change) : await change(deps.db);
  if (moved) announce(deps.bus, deploymentId, move.origin);
  if (listenerId) announceListener(deps.bus, listenerId);
  return moved;
}
