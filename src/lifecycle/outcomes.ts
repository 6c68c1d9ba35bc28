import { withServingUrl } from '../domain/deployment-config.js';
import { IN_PROGRESS_STATUSES } from '../domain/revision-status.js';
import type { Executor } from '../store/database.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import { revisionsInStatus } from '../store/repositories/revisions.js';
import { type DeploymentFence, type DeploymentMove, moveDeployment } from './deployments.js';
import type { LifecycleDeps } from './revisions.js';

/**
 * What a revision's outcome does to its deployment, whoever reports it: the engine for the
 * local runtime, the listener protocol (and its handover deadline) for a placed deployment.
 * Each runs inside the transaction that moves the revision, so the deployment never names a
 * revision that is not DEPLOYED, nor sits READY with nothing that ever served.
 */

/** The columns a deployment takes when `revisionId` serves, at `url` when the runtime says where. */
export function servingColumns(
  deployment: Pick<DeploymentRecord, 'url' | 'source_config'>,
  revisionId: string,
  url: string | null,
): NonNullable<DeploymentMove['set']> {
  if (url === null) return { active_revision_id: revisionId };
  return { active_revision_id: revisionId, url, source_config: withServingUrl(deployment.source_config, deployment.url, url) };
}

/**
 * The revision is DEPLOYED: the deployment is READY and serves it. A deployment being
 * deleted meanwhile stays AWAITING_DELETE (no status that leads to READY holds it), so the
 * delete is not lost.
 */
export async function deploymentServes(
  deps: LifecycleDeps,
  trx: Executor,
  deployment: Pick<DeploymentRecord, 'id' | 'url' | 'source_config'>,
  serving: { revisionId: string; url: string | null; fence: DeploymentFence },
): Promise<boolean> {
  const set = servingColumns(deployment, serving.revisionId, serving.url);
  return moveDeployment(deps, deployment.id, 'READY', { fence: serving.fence, set }, trx);
}

/**
 * Nothing serves and nothing is in flight: the deployment is UNUSED until a revision deploys.
 * `inFlightChecked`: the caller has just read that no revision is in progress (the engine's
 * worker, under its lease), so it is not asked again.
 */
export async function settleUnused(
  deps: LifecycleDeps,
  deploymentId: string,
  settle: { fence: DeploymentFence; origin?: string; inFlightChecked?: boolean },
  trx?: Executor,
): Promise<boolean> {
  if (!settle.inFlightChecked && (await revisionsInStatus(trx ?? deps.db, deploymentId, [...IN_PROGRESS_STATUSES])).length > 0) return false;
  return moveDeployment(deps, deploymentId, 'UNUSED', { fence: settle.fence, requireInactive: true, origin: settle.origin }, trx);
}
