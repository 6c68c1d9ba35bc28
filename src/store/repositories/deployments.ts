import { sql, type Updateable } from 'kysely';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type DeploymentRow = Database['deployments'];

export interface DeploymentFilters {
  nameContains?: string;
  name?: string;
  statuses?: string[];
  remoteReconciled?: boolean;
  imageVersion?: string;
  deploymentType?: string;
  ids?: string[];
  /** Berth has no tags yet: a non-empty tag filter matches nothing. */
  tagValueIds?: string[];
}

export async function insertDeployment(db: Executor, row: DeploymentRow): Promise<void> {
  await db.insertInto('deployments').values(row).execute();
}

export async function findDeployment(db: Executor, workspaceId: string, id: string): Promise<DeploymentRow | undefined> {
  return db.selectFrom('deployments').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** For the engine, which works across workspaces. */
export async function findDeploymentById(db: Executor, id: string): Promise<DeploymentRow | undefined> {
  return db.selectFrom('deployments').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Reads the deployment and takes its row lock for the rest of the transaction (a write
 * does on both databases), so concurrent PATCHes of one deployment queue up instead of
 * numbering two revisions alike.
 */
export async function lockDeployment(db: Executor, workspaceId: string, id: string, now: string): Promise<DeploymentRow | undefined> {
  return db
    .updateTable('deployments')
    .set({ updated_at: now })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .returningAll()
    .executeTakeFirst();
}

export async function updateDeployment(db: Executor, id: string, changes: Updateable<DeploymentRow>): Promise<void> {
  await db.updateTable('deployments').set(changes).where('id', '=', id).execute();
}

/** Compare-and-set on the status; false when another writer moved it first. */
export async function moveDeploymentStatus(db: Executor, id: string, from: string[], to: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('deployments')
    .set({ status: to, updated_at: now })
    .where('id', '=', id)
    .where('status', 'in', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteDeployment(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('deployments').where('id', '=', id).execute();
}

export async function listDeployments(
  db: Executor,
  workspaceId: string,
  filters: DeploymentFilters,
  page: { limit: number; offset: number },
): Promise<DeploymentRow[]> {
  if (filters.tagValueIds && filters.tagValueIds.length > 0) return [];
  let query = db.selectFrom('deployments').selectAll().where('workspace_id', '=', workspaceId);
  if (filters.nameContains) {
    const pattern = `%${filters.nameContains.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // Explicit ESCAPE: SQLite has no default escape character for LIKE.
    query = query.where(sql<boolean>`lower(name) like ${pattern} escape '\\'`);
  }
  if (filters.name !== undefined) {
    // Names are unique without regard to case, and only `lower(name)` is indexed (with the
    // workspace): the implied condition on it finds the one row by index instead of reading
    // the workspace's every deployment; `name =` keeps the match exact.
    // (The database's own lower() on both sides: it may fold case differently from JS.)
    query = query.where(sql<boolean>`lower(name) = lower(${filters.name})`).where('name', '=', filters.name);
  }
  if (filters.statuses && filters.statuses.length > 0) query = query.where('status', 'in', filters.statuses);
  if (filters.remoteReconciled !== undefined) query = query.where('remote_reconciled', '=', filters.remoteReconciled ? 1 : 0);
  if (filters.imageVersion !== undefined) query = query.where('image_version', '=', filters.imageVersion);
  if (filters.deploymentType !== undefined) query = query.where('deployment_type', '=', filters.deploymentType);
  if (filters.ids && filters.ids.length > 0) query = query.where('id', 'in', filters.ids);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
}
