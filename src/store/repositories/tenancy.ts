import { workspaceNameKey } from '../../domain/tenancy.js';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';
import { inBatches } from '../batches.js';
import { preparedQuery } from '../prepared.js';

/** A key as stored, its deployment list decoded (empty for every role but `deployer`). */
export type ApiKeyRow = Omit<Database['api_keys'], 'deployment_ids' | 'runner_labels'> & { deployment_ids: string[]; runner_labels?: string[] };
/** A workspace as the API knows it; `name_key` is the store's own. */
export type WorkspaceRow = Omit<Database['workspaces'], 'name_key'>;

const WORKSPACE_COLUMNS = ['id', 'organization_id', 'name', 'created_at'] as const;

export async function countOrganizations(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('organizations')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Inserts the organization unless one with that name exists; answers whether it inserted. */
export async function insertOrganizationIfAbsent(db: Executor, row: Database['organizations']): Promise<boolean> {
  const inserted = await db
    .insertInto('organizations')
    .values(row)
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** A workspace with a name unique in its organization without regard to case: a duplicate is a unique violation. */
export async function insertWorkspace(db: Executor, row: WorkspaceRow): Promise<void> {
  await db
    .insertInto('workspaces')
    .values({ ...row, name_key: workspaceNameKey(row.name) })
    .execute();
}

export async function findWorkspace(db: Executor, organizationId: string, workspaceId: string): Promise<WorkspaceRow | undefined> {
  return db.selectFrom('workspaces').select(WORKSPACE_COLUMNS).where('organization_id', '=', organizationId).where('id', '=', workspaceId).executeTakeFirst();
}

export async function listWorkspaces(db: Executor, organizationId: string): Promise<WorkspaceRow[]> {
  return db.selectFrom('workspaces').select(WORKSPACE_COLUMNS).where('organization_id', '=', organizationId).orderBy('created_at').orderBy('id').execute();
}

export async function insertApiKey(db: Executor, row: ApiKeyRow): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      ...row,
      deployment_ids: row.role === 'deployer' ? JSON.stringify(row.deployment_ids) : null,
      runner_labels: row.role === 'runner' ? JSON.stringify(row.runner_labels ?? []) : null,
    })
    .execute();
}

export function decodeApiKey(row: Database['api_keys']): ApiKeyRow {
  const { runner_labels: labels, ...rest } = row;
  return {
    ...rest,
    deployment_ids: row.deployment_ids === null ? [] : (JSON.parse(row.deployment_ids) as string[]),
    ...(labels === null ? {} : { runner_labels: JSON.parse(labels) as string[] }),
  };
}

const API_KEY_COLUMNS = [
  'id',
  'organization_id',
  'workspace_id',
  'name',
  'role',
  'key_hash',
  'key_hint',
  'created_at',
  'listener_id',
  'deployment_ids',
  'runner_labels',
] as const satisfies readonly (keyof Database['api_keys'])[];

// Every request whose key is not cached reads this (a listener's poll every 30 s is never cached).
const selectApiKeyByHash = preparedQuery((db: Executor, keyHash: string) => db.selectFrom('api_keys').select(API_KEY_COLUMNS).where('key_hash', '=', keyHash));

export async function findApiKeyByHash(db: Executor, keyHash: string): Promise<ApiKeyRow | undefined> {
  const [row] = await selectApiKeyByHash(db, keyHash);
  return row && decodeApiKey(row);
}

/** Which of these key ids exist (a revoked key's row is deleted). */
export async function existingApiKeyIds(db: Executor, ids: string[]): Promise<Set<string>> {
  const existing = new Set<string>();
  await inBatches(ids, async (batch) => {
    const rows = await db.selectFrom('api_keys').select('id').where('id', 'in', batch).execute();
    for (const row of rows) existing.add(row.id);
  });
  return existing;
}

export async function listApiKeys(db: Executor, organizationId: string): Promise<ApiKeyRow[]> {
  const rows = await db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId).orderBy('created_at').orderBy('id').execute();
  return rows.map(decodeApiKey);
}

/** Deletes the key; answers its name, or undefined when there was no such key. */
export async function deleteApiKey(db: Executor, organizationId: string, keyId: string): Promise<{ name: string } | undefined> {
  return db.deleteFrom('api_keys').where('organization_id', '=', organizationId).where('id', '=', keyId).returning('name').executeTakeFirst();
}

/** A listener of any workspace of the organization (listener keys are made by the organization's admins). */
export async function findListenerOfOrganization(
  db: Executor,
  organizationId: string,
  listenerId: string,
): Promise<{ id: string; workspace_id: string } | undefined> {
  return db
    .selectFrom('listeners as l')
    .innerJoin('workspaces as w', 'w.id', 'l.workspace_id')
    .select(['l.id', 'l.workspace_id'])
    .where('w.organization_id', '=', organizationId)
    .where('l.id', '=', listenerId)
    .executeTakeFirst();
}

/** Which of these deployments are in the workspace (a deployer key is made for deployments of its own workspace). */
export async function deploymentsInWorkspace(db: Executor, workspaceId: string, ids: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  await inBatches(ids, async (batch) => {
    const rows = await db.selectFrom('deployments').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', batch).execute();
    for (const row of rows) found.add(row.id);
  });
  return found;
}
