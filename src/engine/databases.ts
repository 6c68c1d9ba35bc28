import type { Secret } from '../domain/secrets.js';
import type { PostgresProvisioner } from '../provisioning/postgres.js';
import type { RedisProvisioner } from '../provisioning/redis.js';
import { resourceUriContext } from '../security/resource-uris.js';
import { nowIso } from '../store/database.js';
import { type ResourceKind, resourcesOf, saveResource } from '../store/repositories/resources.js';
import type { WorkContext } from './context.js';
import { DriverError, type StepContext } from './drivers/types.js';

/** Where per-deployment databases come from (BERTH_DEPLOYMENT_POSTGRES_URL / _REDIS_URL); none: nothing is provisioned. */
export interface Provisioners {
  postgres?: PostgresProvisioner;
  redis?: RedisProvisioner;
}

/** A secret of this name means the deployment brings its own (the public service's rule), and Berth provisions none. */
const CUSTOM: Record<ResourceKind, string> = { postgres: 'POSTGRES_URI_CUSTOM', redis: 'REDIS_URI_CUSTOM' };
/** What the container gets for each. */
const VARIABLE: Record<ResourceKind, string> = { postgres: 'POSTGRES_URI', redis: 'REDIS_URI' };

/** The kinds Berth must still provision for the deployment before its revision runs. */
export async function missingDatabases(ctx: WorkContext, deploymentId: string, secrets: readonly Secret[]): Promise<ResourceKind[]> {
  const wanted = (['postgres', 'redis'] as const).filter((kind) => ctx.provisioners[kind] && !secrets.some((s) => s.name === CUSTOM[kind]));
  if (wanted.length === 0) return [];
  const have = new Set((await resourcesOf(ctx.db, deploymentId)).map((r) => r.kind));
  return wanted.filter((kind) => !have.has(kind));
}

/** Creates the deployment's databases and keeps their URIs (encrypted) for its containers. */
export async function provisionDatabases(ctx: WorkContext, deployment: { id: string; name: string }, kinds: ResourceKind[], step: StepContext): Promise<void> {
  for (const kind of kinds) {
    await step.log('INFO', `Creating the ${kind === 'postgres' ? 'PostgreSQL database and role' : 'Redis database and user'} of the deployment`);
    const uri = await provisionOne(ctx, kind, deployment);
    await saveResource(ctx.db, {
      deployment_id: deployment.id,
      kind,
      uri_encrypted: ctx.encryptor.encrypt(uri, resourceUriContext(deployment.id, kind)),
      created_at: nowIso(),
    });
    await step.log('INFO', `${VARIABLE[kind]} is ready`);
  }
}

async function provisionOne(ctx: WorkContext, kind: ResourceKind, deployment: { id: string; name: string }): Promise<string> {
  try {
    if (kind === 'postgres') return (await (ctx.provisioners.postgres as PostgresProvisioner).provision(deployment.id, deployment.name)).uri;
    return (await (ctx.provisioners.redis as RedisProvisioner).provision(deployment.id)).uri;
  } catch (error) {
    // Provisioning errors name the server and what to check, never a password.
    throw new DriverError((error as Error).message);
  }
}

/** POSTGRES_URI / REDIS_URI of what Berth provisioned for the deployment. */
export async function databaseEnv(ctx: WorkContext, deploymentId: string): Promise<Record<string, string>> {
  const rows = await resourcesOf(ctx.db, deploymentId);
  return Object.fromEntries(rows.map((row) => [VARIABLE[row.kind], ctx.encryptor.decrypt(row.uri_encrypted, resourceUriContext(deploymentId, row.kind))]));
}

/** Drops what Berth provisioned for a deployment being deleted; safe to repeat. */
export async function deprovisionDatabases(ctx: WorkContext, deploymentId: string): Promise<void> {
  const kinds = new Set((await resourcesOf(ctx.db, deploymentId)).map((r) => r.kind));
  if (kinds.has('postgres') && ctx.provisioners.postgres) await ctx.provisioners.postgres.deprovision(deploymentId);
  if (kinds.has('redis') && ctx.provisioners.redis) await ctx.provisioners.redis.deprovision(deploymentId);
}
