import { PostgresAdapter } from 'kysely';
import type { Executor } from '../database.js';
import type { Database } from '../schema.js';
import { inBatches } from '../batches.js';
import { preparedQuery } from '../prepared.js';

export interface ComputeConfig {
  k8s_namespaces: string[];
}

/** A listener row with its JSON column decoded. */
export interface ListenerRecord extends Omit<Database['listeners'], 'compute_config' | 'offline_announced_at'> {
  compute_config: ComputeConfig;
}

export type ListenerChanges = Partial<Pick<ListenerRecord, 'version' | 'compute_config'>> & { updated_at: string };

/**
 * Row locks exist only on PostgreSQL; SQLite runs one transaction at a time anyway, so
 * there the lock is simply left out.
 */
export type RowLock = 'share' | 'update';

export async function insertListener(db: Executor, record: ListenerRecord): Promise<void> {
  await db.insertInto('listeners').values(encode(record)).execute();
}

export async function findListener(db: Executor, workspaceId: string, id: string, lock?: RowLock): Promise<ListenerRecord | undefined> {
  let query = db.selectFrom('listeners').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id);
  if (lock && db.getExecutor().adapter instanceof PostgresAdapter) {
    query = lock === 'share' ? query.forShare() : query.forUpdate();
  }
  const row = await query.executeTakeFirst();
  return row && decode(row);
}

export async function listListeners(db: Executor, workspaceId: string, page: { limit: number; offset: number }): Promise<ListenerRecord[]> {
  const rows = await db
    .selectFrom('listeners')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(decode);
}

/** Writes only the fields given, so two PATCHes of different fields do not undo each other. */
export async function updateListener(db: Executor, workspaceId: string, id: string, changes: ListenerChanges): Promise<boolean> {
  const { compute_config, ...rest } = changes;
  const result = await db
    .updateTable('listeners')
    .set({ ...rest, ...(compute_config ? { compute_config: JSON.stringify(compute_config) } : {}) })
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteListener(db: Executor, workspaceId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('listeners').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function listListenerIds(db: Executor, workspaceId: string): Promise<string[]> {
  const rows = await selectListenerIds(db, workspaceId);
  return rows.map((row) => row.id);
}

const selectListenerIds = preparedQuery((db, workspaceId: string) =>
  db.selectFrom('listeners').select('id').where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id'),
);

export async function countDeploymentsOnListener(db: Executor, listenerId: string): Promise<number> {
  const row = await db
    .selectFrom('deployments')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('listener_id', '=', listenerId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Namespaces the deployments placed on a listener use (deployments being deleted included). */
export async function namespacesInUse(db: Executor, listenerId: string): Promise<Set<string>> {
  const rows = await db.selectFrom('deployments').select('source_config').where('listener_id', '=', listenerId).execute();
  const namespaces = new Set<string>();
  for (const row of rows) {
    const namespace = (JSON.parse(row.source_config) as { listener_config?: { k8s_namespace?: unknown } | null }).listener_config?.k8s_namespace;
    if (typeof namespace === 'string') namespaces.add(namespace);
  }
  return namespaces;
}

function encode(record: ListenerRecord): Omit<Database['listeners'], 'offline_announced_at'> {
  return { ...record, compute_config: JSON.stringify(record.compute_config) };
}

function decode(row: Omit<Database['listeners'], 'offline_announced_at'>): ListenerRecord {
  const parsed = JSON.parse(row.compute_config) as Partial<ComputeConfig> | null;
  const namespaces = Array.isArray(parsed?.k8s_namespaces) ? parsed.k8s_namespaces.filter((n) => typeof n === 'string') : [];
  return { ...row, compute_config: { k8s_namespaces: namespaces } };
}

/** One more change of the listener's desired state (see the listener protocol). */
export async function bumpGeneration(db: Executor, listenerId: string): Promise<void> {
  await db
    .updateTable('listeners')
    .set((eb) => ({ generation: eb('generation', '+', 1) }))
    .where('id', '=', listenerId)
    .execute();
}

/** The same for the listener a deployment is placed on; answers that listener (undefined when it is on none). */
export async function bumpGenerationOfDeployment(db: Executor, deploymentId: string): Promise<string | undefined> {
  const row = await db
    .updateTable('listeners')
    .set((eb) => ({ generation: eb('generation', '+', 1) }))
    .where('id', '=', (eb) => eb.selectFrom('deployments').select('listener_id').where('id', '=', deploymentId))
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

/** Named columns, so the prepared form survives a migration that adds one (store/prepared.ts). */
const LISTENER_COLUMNS = [
  'id',
  'workspace_id',
  'compute_type',
  'compute_id',
  'compute_config',
  'version',
  'created_at',
  'updated_at',
  'generation',
  'last_seen_at',
] as const satisfies readonly (keyof Database['listeners'])[];

// An agent's every poll reads these: compiled once, not built by Kysely each time.
const selectListener = preparedQuery((db: Executor, id: string) => db.selectFrom('listeners').select(LISTENER_COLUMNS).where('id', '=', id));
const selectGeneration = preparedQuery((db: Executor, id: string) => db.selectFrom('listeners').select('generation').where('id', '=', id));
const touch = preparedQuery((db: Executor, id: string, changes: { last_seen_at: string; version?: string }) =>
  db.updateTable('listeners').set(changes).where('id', '=', id).returning('generation'),
);

/** A listener by id alone (for its own key, which names it). */
export async function findListenerById(db: Executor, id: string): Promise<ListenerRecord | undefined> {
  const [row] = await selectListener(db, id);
  return row && decode(row);
}

export async function generationOf(db: Executor, id: string): Promise<number | undefined> {
  const [row] = await selectGeneration(db, id);
  return row?.generation;
}

/** The generations of several listeners at once (those that exist), by id. */
export async function generationsOf(db: Executor, ids: string[]): Promise<Map<string, number>> {
  const generations = new Map<string, number>();
  await inBatches(ids, async (batch) => {
    const rows = await db.selectFrom('listeners').select(['id', 'generation']).where('id', 'in', batch).execute();
    for (const row of rows) generations.set(row.id, row.generation);
  });
  return generations;
}

/**
 * The agent called: when, and (from a heartbeat) the version it runs. Answers the
 * listener's generation as this write found it, or undefined when the listener is gone.
 */
export async function markSeen(db: Executor, id: string, at: string, version?: string): Promise<number | undefined> {
  const [row] = await touch(db, id, { last_seen_at: at, version });
  return row?.generation;
}

/** When each listener was last heard from (those ever heard from): the metrics' listener ages. */
export async function listenerSightings(db: Executor): Promise<{ listenerId: string; lastSeenAt: Date }[]> {
  const rows = await db.selectFrom('listeners').select(['id', 'last_seen_at']).where('last_seen_at', 'is not', null).execute();
  return rows.map((row) => ({ listenerId: row.id, lastSeenAt: new Date(row.last_seen_at as string) }));
}
