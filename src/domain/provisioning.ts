/** What Berth provisions per deployment when the operator configured a server for it. */
export type ProvisionedKind = 'postgres' | 'redis';

/** A secret of this name means the deployment brings its own (the public service's rule), and Berth provisions none. */
export const CUSTOM_URI_SECRET: Record<ProvisionedKind, string> = { postgres: 'POSTGRES_URI_CUSTOM', redis: 'REDIS_URI_CUSTOM' };

const LABEL: Record<ProvisionedKind, string> = { postgres: 'PostgreSQL database', redis: 'Redis user' };

export function bringsItsOwn(kind: ProvisionedKind, secrets: readonly { name: string }[]): boolean {
  return secrets.some((secret) => secret.name === CUSTOM_URI_SECRET[kind]);
}

/**
 * Why a deployment gets no database: its workspace holds as many as it may
 * (BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE), whatever other workspaces hold. The same
 * words at create (when the workspace is known to be full) and from the engine (which
 * counts and reserves in one transaction, so deployments created together cannot pass
 * the limit between them).
 */
export function databaseLimitMessage(kind: ProvisionedKind, limit: number): string {
  return (
    `This workspace already has ${limit} deployment${limit === 1 ? '' : 's'} with a ${LABEL[kind]} provisioned by Berth, its limit ` +
    `(BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE). Delete one of them, or give this deployment its own with the secret ${CUSTOM_URI_SECRET[kind]}.`
  );
}
