import { sql, type Updateable } from 'kysely';
import type { Executor } from '../database.js';
import { preparedQuery } from '../prepared.js';
import type { Database } from '../schema.js';
import type { RevisionRow } from './revisions.js';

export type DeploymentRow = Database['deployments'];

/** A deployment with its latest revision, read together because every answer shows both. */
export interface DeploymentWithLatest {
  deployment: DeploymentRow;
  latest: RevisionRow | undefined;
}

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

const REVISION_COLUMNS = [
  'id', 'deployment_id', 'seq', 'source', 'source_revision_config', 'resource_spec', 'status', 'status_message',
  'remote_reconciled', 'image_ref', 'runtime_handle', 'url', 'created_at', 'updated_at',
] as const satisfies readonly (keyof RevisionRow)[];

const LATEST = 'latest__';

/** Deployments joined to their latest revisions, whose columns come back prefixed `latest__`. */
function selectWithLatest(db: Executor) {
  return db
    .selectFrom('deployments')
    .leftJoin('revisions as latest', 'latest.id', 'deployments.latest_revision_id')
    .selectAll('deployments')
    .select((eb) => REVISION_COLUMNS.map((column) => eb.ref(`latest.${column}`).as(`${LATEST}${column}`)))
    .$castTo<JoinedRow>();
}

type JoinedRow = DeploymentRow & { [Column in (typeof REVISION_COLUMNS)[number] as `latest__${Column}`]: RevisionRow[Column] | null };

/** Written out column by column: a generic copy over the joined columns was a tenth of a listing's time. */
function splitLatest(row: JoinedRow): DeploymentWithLatest {
  const deployment: DeploymentRow = {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    display_name: row.display_name,
    source: row.source,
    source_config: row.source_config,
    deployment_type: row.deployment_type,
    listener_id: row.listener_id,
    image_version: row.image_version,
    status: row.status,
    remote_reconciled: row.remote_reconciled,
    latest_revision_id: row.latest_revision_id,
    active_revision_id: row.active_revision_id,
    revision_count: row.revision_count,
    lease_owner: row.lease_owner,
    lease_expires_at: row.lease_expires_at,
    url: row.url,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  if (row.latest__id === null) return { deployment, latest: undefined };
  const latest: RevisionRow = {
    id: row.latest__id,
    deployment_id: row.latest__deployment_id as string,
    seq: row.latest__seq as number,
    source: row.latest__source as string,
    source_revision_config: row.latest__source_revision_config as string,
    resource_spec: row.latest__resource_spec,
    status: row.latest__status as string,
    status_message: row.latest__status_message,
    remote_reconciled: row.latest__remote_reconciled as number,
    image_ref: row.latest__image_ref,
    runtime_handle: row.latest__runtime_handle,
    url: row.latest__url,
    created_at: row.latest__created_at as string,
    updated_at: row.latest__updated_at as string,
  };
  return { deployment, latest };
}

const selectOneWithLatest = preparedQuery((db, workspaceId: string, id: string) =>
  selectWithLatest(db).where('deployments.id', '=', id).where('deployments.workspace_id', '=', workspaceId),
);

export async function findDeploymentWithLatest(db: Executor, workspaceId: string, id: string): Promise<DeploymentWithLatest | undefined> {
  const [joined] = await selectOneWithLatest(db, workspaceId, id);
  return joined && splitLatest(joined);
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
): Promise<DeploymentWithLatest[]> {
  if (filters.tagValueIds && filters.tagValueIds.length > 0) return [];
  let query = selectWithLatest(db).where('deployments.workspace_id', '=', workspaceId);
  if (filters.nameContains) {
    const pattern = `%${filters.nameContains.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // Explicit ESCAPE: SQLite has no default escape character for LIKE.
    query = query.where(sql<boolean>`lower(deployments.name) like ${pattern} escape '\\'`);
  }
  if (filters.name !== undefined) {
    // Names are unique without regard to case, and only `lower(name)` is indexed (with the
    // workspace): the implied condition on it finds the one row by index instead of reading
    // the workspace's every deployment; `name =` keeps the match exact.
    // (The database's own lower() on both sides: it may fold case differently from JS.)
    query = query.where(sql<boolean>`lower(deployments.name) = lower(${filters.name})`).where('deployments.name', '=', filters.name);
  }
  if (filters.statuses && filters.statuses.length > 0) query = query.where('deployments.status', 'in', filters.statuses);
  if (filters.remoteReconciled !== undefined) query = query.where('deployments.remote_reconciled', '=', filters.remoteReconciled ? 1 : 0);
  if (filters.imageVersion !== undefined) query = query.where('deployments.image_version', '=', filters.imageVersion);
  if (filters.deploymentType !== undefined) query = query.where('deployments.deployment_type', '=', filters.deploymentType);
  if (filters.ids && filters.ids.length > 0) query = query.where('deployments.id', 'in', filters.ids);
  const rows = await query
    .orderBy('deployments.created_at', 'desc')
    .orderBy('deployments.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(splitLatest);
}
