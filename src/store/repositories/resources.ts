import { PostgresAdapter } from 'kysely';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type ResourceKind = Database['deployment_resources']['kind'];

/** A provisioned database or Redis user of a deployment, with its stored columns decoded. */
export interface ResourceRecord {
  deployment_id: string;
  kind: ResourceKind;
  /** AES-256-GCM of the URI the deployment's containers get. */
  uri_encrypted: string;
  /** The random names; null for resources of earlier versions (named after the deployment id). */
  names: Record<string, string> | null;
  /** Whether the server has them; false between choosing the names and creating them. */
  ready: boolean;
  created_at: string;
}

export async function resourcesOf(db: Executor, deploymentId: string): Promise<ResourceRecord[]> {
  const rows = await db.selectFrom('deployment_resources').selectAll().where('deployment_id', '=', deploymentId).execute();
  return rows.map((row) => ({ ...row, names: row.names === null ? null : (JSON.parse(row.names) as Record<string, string>), ready: row.ready === 1 }));
}

/** Resources of a kind held by the deployments of a workspace (those being created or deleted included). */
export async function countWorkspaceResources(db: Executor, workspaceId: string, kind: ResourceKind): Promise<number> {
  const { held } = await db
    .selectFrom('deployment_resources as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select((eb) => eb.fn.countAll<number | string>().as('held'))
    .where('d.workspace_id', '=', workspaceId)
    .where('r.kind', '=', kind)
    .executeTakeFirstOrThrow();
  return Number(held);
}

/**
 * Keeps the names and URI of a resource about to be created, unless the deployment's
 * workspace already holds `limit` resources of that kind (then false, and nothing is
 * written). The count and the insert are one transaction under a lock of the workspace
 * row on PostgreSQL (SQLite runs one transaction at a time), so concurrent deployments
 * of one workspace cannot exceed the limit together, and other workspaces never wait
 * on it.
 */
export async function reserveResource(db: Executor, workspaceId: string, limit: number, resource: Omit<ResourceRecord, 'ready'>): Promise<boolean> {
  const reserve = async (trx: Executor) => {
    if (trx.getExecutor().adapter instanceof PostgresAdapter) {
      await trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().execute();
    }
    if ((await countWorkspaceResources(trx, workspaceId, resource.kind)) >= limit) return false;
    await trx
      .insertInto('deployment_resources')
      .values({ ...resource, names: resource.names === null ? null : JSON.stringify(resource.names), ready: 0 })
      .execute();
    return true;
  };
  return db.isTransaction ? reserve(db) : db.transaction().execute(reserve);
}

/** The server has the resource now (or, for one of an earlier version, its current rules). */
export async function markResourceReady(db: Executor, deploymentId: string, kind: ResourceKind, names: Record<string, string>): Promise<void> {
  await db
    .updateTable('deployment_resources')
    .set({ ready: 1, names: JSON.stringify(names) })
    .where('deployment_id', '=', deploymentId)
    .where('kind', '=', kind)
    .execute();
}
