/** Deployment statuses (seed spec). */
export const DEPLOYMENT_STATUSES = ['AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE', 'UNKNOWN'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod', 'dev_zero', 'dev_free_zero'] as const;
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];
export const DEFAULT_DEPLOYMENT_TYPE: DeploymentType = 'prod';

/**
 * Every status change a deployment may make:
 * - created AWAITING_DATABASE; READY once its database is there or a revision serves;
 * - READY again when a newer revision takes over (the same status, a new active revision);
 * - UNUSED while nothing serves and nothing is in flight (every revision ended without deploying);
 * - UNKNOWN when its runtime lost track of it (a listener that stopped reporting);
 * - AWAITING_DELETE from anywhere, by request; the deployment is then removed, not moved on.
 */
export const DEPLOYMENT_TRANSITIONS: Readonly<Record<DeploymentStatus, readonly DeploymentStatus[]>> = {
  AWAITING_DATABASE: ['READY', 'UNUSED', 'UNKNOWN', 'AWAITING_DELETE'],
  READY: ['READY', 'UNUSED', 'UNKNOWN', 'AWAITING_DELETE'],
  UNUSED: ['READY', 'UNKNOWN', 'AWAITING_DELETE'],
  UNKNOWN: ['READY', 'UNUSED', 'AWAITING_DELETE'],
  AWAITING_DELETE: [],
};

const LEADING_TO = Object.fromEntries(
  DEPLOYMENT_STATUSES.map((to) => [to, Object.freeze(DEPLOYMENT_STATUSES.filter((from) => DEPLOYMENT_TRANSITIONS[from].includes(to)))]),
) as Record<DeploymentStatus, readonly DeploymentStatus[]>;

/** The statuses from which a deployment may move to `to` (every status change asks). */
export function deploymentStatusesLeadingTo(to: DeploymentStatus): readonly DeploymentStatus[] {
  return LEADING_TO[to];
}
