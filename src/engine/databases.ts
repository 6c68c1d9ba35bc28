import { bringsItsOwn, databaseLimitMessage } from '../domain/provisioning.js';
import type { Secret } from '../domain/secrets.js';
import { legacyPostgresNames, newPostgresCredentials, type PostgresProvisioner } from '../provisioning/postgres.js';
import { newRedisCredentials, type RedisProvisioner } from '../provisioning/redis.js';
import { resourceUriContext } from '../security/resource-uris.js';
import { provisionedVariables } from '../provisioning/variables.js';
import { nowIso } from '../store/database.js';
import { markResourceReady, type ResourceKind, type ResourceRecord, reserveResource, resourcesOf } from '../store/repositories/resources.js';
import type { WorkContext } from './context.js';
import { DriverError, type StepContext } from './drivers/types.js';

/** Where per-deployment databases come from (BERTH_DEPLOYMENT_POSTGRES_URL / _REDIS_URL); none: nothing is provisioned. */
export interface Provisioners {
  postgres?: PostgresProvisioner;
  redis?: RedisProvisioner;
}

type Deployment = { id: string; workspace_id: string };

/**
 * The kinds Berth must still provision for the deployment before its revision runs: none
 * yet, chosen but not created (a crash in between), or, for PostgreSQL, provisioned by an
 * earlier version and not yet brought to today's access rules.
 */
export async function missingDatabases(ctx: WorkContext, deploymentId: string, secrets: readonly Secret[]): Promise<ResourceKind[]> {
  const wanted = (['postgres', 'redis'] as const).filter((kind) => ctx.provisioners[kind] && !bringsItsOwn(kind, secrets));
  if (wanted.length === 0) return [];
  const have = new Map((await resourcesOf(ctx.db, deploymentId)).map((row) => [row.kind, row]));
  return wanted.filter((kind) => {
    const row = have.get(kind);
    return !row || !row.ready || (kind === 'postgres' && row.names === null);
  });
}

/**
 * Creates the deployment's databases and keeps their URIs (encrypted) for its containers.
 * Names and password are chosen and stored first (counted against the workspace's limit
 * in the same transaction), then created on the server, then marked ready: a retry after
 * a crash creates the same ones.
 */
export async function provisionDatabases(ctx: WorkContext, deployment: Deployment, kinds: ResourceKind[], step: StepContext): Promise<void> {
  const rows = new Map((await resourcesOf(ctx.db, deployment.id)).map((row) => [row.kind, row]));
  for (const kind of kinds) {
    try {
      if (kind === 'postgres') await ensurePostgres(ctx, ctx.provisioners.postgres as PostgresProvisioner, deployment, rows.get(kind), step);
      else await ensureRedis(ctx, ctx.provisioners.redis as RedisProvisioner, deployment, rows.get(kind), step);
    } catch (error) {
      // Provisioning errors name the server and what to check, never a password.
      throw error instanceof DriverError ? error : new DriverError((error as Error).message);
    }
  }
}

async function ensurePostgres(ctx: WorkContext, provisioner: PostgresProvisioner, deployment: Deployment, row: ResourceRecord | undefined, step: StepContext) {
  if (row && row.names === null) {
    const names = legacyPostgresNames(deployment.id);
    await provisioner.harden(names);
    await markResourceReady(ctx.db, deployment.id, 'postgres', { ...names });
    return;
  }
  await step.log('INFO', 'Creating the PostgreSQL database and role of the deployment');
  let credentials;
  if (row) {
    credentials = provisioner.credentialsOf(decryptUri(ctx, row));
  } else {
    credentials = newPostgresCredentials();
    await reserve(ctx, provisioner.perWorkspace, deployment, 'postgres', provisioner.uriFor(credentials), {
      database: credentials.database,
      role: credentials.role,
    });
  }
  await provisioner.provision(credentials);
  await markResourceReady(ctx.db, deployment.id, 'postgres', { database: credentials.database, role: credentials.role });
  await step.log('INFO', 'POSTGRES_URI is ready');
}

async function ensureRedis(ctx: WorkContext, provisioner: RedisProvisioner, deployment: Deployment, row: ResourceRecord | undefined, step: StepContext) {
  await step.log('INFO', 'Creating the Redis user and key prefix of the deployment');
  let credentials;
  if (row?.names) {
    credentials = { user: String(row.names.user), prefix: String(row.names.prefix), password: provisioner.passwordOf(decryptUri(ctx, row)) };
  } else {
    credentials = newRedisCredentials();
    await reserve(ctx, provisioner.perWorkspace, deployment, 'redis', provisioner.uriFor(credentials), { user: credentials.user, prefix: credentials.prefix });
  }
  await provisioner.provision(credentials);
  await markResourceReady(ctx.db, deployment.id, 'redis', { user: credentials.user, prefix: credentials.prefix });
  await step.log('INFO', 'REDIS_URI and REDIS_KEY_PREFIX are ready');
}

async function reserve(ctx: WorkContext, limit: number, deployment: Deployment, kind: ResourceKind, uri: string, names: Record<string, string>): Promise<void> {
  const reserved = await reserveResource(ctx.db, deployment.workspace_id, limit, {
    deployment_id: deployment.id,
    kind,
    uri_encrypted: ctx.encryptor.encrypt(uri, resourceUriContext(deployment.id, kind)),
    names,
    created_at: nowIso(),
  });
  if (!reserved) throw new DriverError(databaseLimitMessage(kind, limit));
}

function decryptUri(ctx: WorkContext, row: ResourceRecord): string {
  return ctx.encryptor.decrypt(row.uri_encrypted, resourceUriContext(row.deployment_id, row.kind));
}

/** POSTGRES_URI / REDIS_URI (and REDIS_KEY_PREFIX) of what Berth provisioned for the deployment. */
export async function databaseVariables(ctx: WorkContext, deploymentId: string): Promise<{ name: string; value: string }[]> {
  return provisionedVariables(ctx.encryptor, await resourcesOf(ctx.db, deploymentId));
}

/** Drops what Berth provisioned for a deployment being deleted; safe to repeat. */
export async function deprovisionDatabases(ctx: WorkContext, deploymentId: string): Promise<void> {
  for (const row of await resourcesOf(ctx.db, deploymentId)) {
    if (row.kind === 'postgres' && ctx.provisioners.postgres) {
      const names = row.names ? { database: String(row.names.database), role: String(row.names.role) } : legacyPostgresNames(deploymentId);
      await ctx.provisioners.postgres.deprovision(names);
    }
    if (row.kind === 'redis' && ctx.provisioners.redis) {
      if (row.names) await ctx.provisioners.redis.deprovision({ user: String(row.names.user), prefix: String(row.names.prefix) });
      else await ctx.provisioners.redis.deprovisionLegacy(deploymentId);
    }
  }
}
