/** Self-hosted clients put this prefix in their base URL; every route is served under it too. */
export const SELF_HOSTED_PREFIX = '/api-host';
