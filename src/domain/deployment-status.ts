/** Deployment statuses (seed spec). */
export const DEPLOYMENT_STATUSES = ['AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE', 'UNKNOWN'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod', 'dev_zero', 'dev_free_zero'] as const;
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];
export const DEFAULT_DEPLOYMENT_TYPE: DeploymentType = 'prod';
