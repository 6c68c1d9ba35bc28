import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type RevisionRow = Database['revisions'];
export type RevisionSecretRow = Database['revision_secrets'];

export async function insertRevision(db: Executor, row: RevisionRow, secrets: RevisionSecretRow[]): Promise<void> {
  await db.insertInto('revisions').values(row).execute();
  if (secrets.length > 0) await db.insertInto('revision_secrets').values(secrets).execute();
}

export async function findRevision(db: Executor, deploymentId: string, id: string): Promise<RevisionRow | undefined> {
  return db.selectFrom('revisions').selectAll().where('id', '=', id).where('deployment_id', '=', deploymentId).executeTakeFirst();
}

export async function findRevisionsByIds(db: Executor, ids: string[]): Promise<RevisionRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('revisions').selectAll().where('id', 'in', ids).execute();
}

export async function secretsOfRevisions(db: Executor, revisionIds: string[]): Promise<RevisionSecretRow[]> {
  if (revisionIds.length === 0) return [];
  return db.selectFrom('revision_secrets').selectAll().where('revision_id', 'in', revisionIds).orderBy('position').execute();
}

/** Newest first: revision numbers order exactly, even within one millisecond. */
export async function listRevisions(
  db: Executor,
  deploymentId: string,
  filters: { statuses?: string[]; remoteReconciled?: boolean },
  page: { limit: number; offset: number },
): Promise<RevisionRow[]> {
  let query = db.selectFrom('revisions').selectAll().where('deployment_id', '=', deploymentId);
  if (filters.statuses && filters.statuses.length > 0) query = query.where('status', 'in', filters.statuses);
  if (filters.remoteReconciled !== undefined) query = query.where('remote_reconciled', '=', filters.remoteReconciled ? 1 : 0);
  return query.orderBy('seq', 'desc').limit(page.limit).offset(page.offset).execute();
}

/** Compare-and-set on the status; false when another writer moved it first. */
export async function moveRevisionStatus(
  db: Executor,
  id: string,
  from: string,
  to: string,
  statusMessage: string | null,
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('revisions')
    .set({ status: to, status_message: statusMessage, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export interface Transition {
  revisionId: string;
  deploymentId: string;
  from: string;
  to: string;
  message: string | null;
  /** The engine worker that must hold the deployment's lease; absent for API requests. */
  worker?: string;
  now: string;
  set?: Partial<Pick<RevisionRow, 'image_ref' | 'runtime_handle' | 'url' | 'source_revision_config'>>;
}

/**
 * Compare-and-set of a revision's status, fenced by the lease when a worker makes it: a
 * worker whose lease was taken over can no longer change anything. False means another
 * writer (an interruption, another worker) got there first.
 */
export async function transitionRevision(db: Executor, t: Transition): Promise<boolean> {
  let query = db
    .updateTable('revisions')
    .set({ ...t.set, status: t.to, status_message: t.message, updated_at: t.now })
    .where('id', '=', t.revisionId)
    .where('deployment_id', '=', t.deploymentId)
    .where('status', '=', t.from);
  if (t.worker !== undefined) {
    const worker = t.worker;
    query = query.where(({ exists, selectFrom }) =>
      exists(selectFrom('deployments').select('id').where('id', '=', t.deploymentId).where('lease_owner', '=', worker)),
    );
  }
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Revisions not yet in a final status, oldest first. */
export async function unfinishedRevisions(db: Executor, deploymentId: string, statuses: string[]): Promise<RevisionRow[]> {
  return db.selectFrom('revisions').selectAll().where('deployment_id', '=', deploymentId).where('status', 'in', statuses).orderBy('seq').execute();
}

export async function findRevisionById(db: Executor, id: string): Promise<RevisionRow | undefined> {
  return db.selectFrom('revisions').selectAll().where('id', '=', id).executeTakeFirst();
}
