import { type Insertable, PostgresAdapter, type Selectable, sql } from 'kysely';
import type { Executor } from '../database.js';
import { EVENT_FENCE_NAMESPACE } from '../migrations/027-event-id-fence.js';
import { preparedQuery } from '../prepared.js';
import { escapeLike } from '../like.js';
import type { Database } from '../schema.js';

export type EventRow = Selectable<Database['deployment_events']>;
export type NewEvent = Insertable<Database['deployment_events']>;

export async function insertEvent(db: Executor, event: NewEvent): Promise<number> {
  const row = await db.insertInto('deployment_events').values(event).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

/** Several events in one statement, in the given order. */
export async function insertEvents(db: Executor, events: readonly NewEvent[]): Promise<void> {
  if (events.length > 0) await insertEventRows(db, events);
}

const insertEventRows = preparedQuery((db, events: readonly NewEventValues[]) => db.insertInto('deployment_events').values(events));

/** An event's columns as plain values (`Insertable` allows expressions). */
type NewEventValues = { [Column in keyof NewEvent]: Extract<NewEvent[Column], string | number | null | undefined> };

export interface LogQuery {
  deploymentId: string;
  /** Absent: every revision of the deployment. */
  revisionId?: string;
  logType: 'build' | 'deploy';
  order: 'asc' | 'desc';
  limit: number;
  /** Exclusive cursor: the id of the last line of the previous page. */
  afterId?: number;
  levels?: string[];
  /** Case-insensitive substring of the message. */
  query?: string;
  startTime?: string;
  endTime?: string;
}

/** Only settled ids, as the event pages (`workspaceEvents`): `next_offset` never passes a line still being written. */
export async function listLogs(db: Executor, q: LogQuery): Promise<EventRow[]> {
  const settled = await settledEventId(db);
  let query = db
    .selectFrom('deployment_events')
    .selectAll()
    .where('deployment_id', '=', q.deploymentId)
    .where('kind', '=', 'log')
    .where('log_type', '=', q.logType);
  if (q.revisionId) query = query.where('revision_id', '=', q.revisionId);
  if (q.afterId !== undefined) query = query.where('id', q.order === 'asc' ? '>' : '<', q.afterId);
  if (settled !== null) query = query.where('id', '<=', settled);
  if (q.levels && q.levels.length > 0) query = query.where('level', 'in', q.levels);
  if (q.query) {
    const pattern = `%${escapeLike(q.query.toLowerCase())}%`;
    // Explicit ESCAPE: SQLite has no default escape character for LIKE.
    query = query.where(sql<boolean>`lower(message) like ${pattern} escape '\\'`);
  }
  if (q.startTime) query = query.where('created_at', '>=', q.startTime);
  if (q.endTime) query = query.where('created_at', '<=', q.endTime);
  return query.orderBy('id', q.order).limit(q.limit).execute();
}

/**
 * Events read in id order for a cursor that only moves forward: `rows` may be sent, every
 * lower id being settled; `held` says that later events are committed already but wait for a
 * lower id still being written (read again soon: its writer may announce another deployment).
 */
export interface EventBatch {
  rows: EventRow[];
  held: boolean;
}

/** Events of a deployment after an id, oldest first: what an SSE stream sends next. */
export async function eventsAfter(db: Executor, deploymentId: string, afterId: number, limit: number): Promise<EventBatch> {
  const settled = await settledEventId(db);
  const rows = await db
    .selectFrom('deployment_events')
    .selectAll()
    .where('deployment_id', '=', deploymentId)
    .where('id', '>', afterId)
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
  return settledPrefix(rows, settled);
}

/** Status changes of one revision, oldest first: its timeline. */
export async function revisionTimeline(db: Executor, revisionId: string): Promise<EventRow[]> {
  return db.selectFrom('deployment_events').selectAll().where('revision_id', '=', revisionId).where('kind', '=', 'status').orderBy('id', 'asc').execute();
}

export interface WorkspaceEventQuery {
  workspaceId: string;
  deploymentId?: string;
  kind?: EventRow['kind'];
  order: 'asc' | 'desc';
  /** Exclusive: events after it (`asc`) or before it (`desc`). */
  cursor?: number;
  limit: number;
}

/**
 * Events of every deployment of a workspace, in id order: the workspace's event page and
 * stream. Only settled ids (below any still being written), in both orders: a page's newest
 * id is where a stream goes on from, and its `next_cursor` is where the next page does.
 */
export async function workspaceEvents(db: Executor, q: WorkspaceEventQuery): Promise<EventBatch> {
  const settled = await settledEventId(db);
  let query = db
    .selectFrom('deployment_events as e')
    .innerJoin('deployments as d', 'd.id', 'e.deployment_id')
    .selectAll('e')
    .where('d.workspace_id', '=', q.workspaceId);
  if (q.deploymentId) query = query.where('e.deployment_id', '=', q.deploymentId);
  if (q.kind) query = query.where('e.kind', '=', q.kind);
  if (q.cursor !== undefined) query = query.where('e.id', q.order === 'asc' ? '>' : '<', q.cursor);
  // Newest first, the unsettled ids come first: left out by the query, or a page would be short.
  if (q.order === 'desc' && settled !== null) query = query.where('e.id', '<=', settled);
  const rows = await query.orderBy('e.id', q.order).limit(q.limit).execute();
  return q.order === 'asc' ? settledPrefix(rows, settled) : { rows, held: false };
}

/**
 * Where a stream that asks for no history starts: every id up to it is settled, so an
 * event committed later is above it (0 when there are none).
 */
export async function latestEventId(db: Executor): Promise<number> {
  const settled = await settledEventId(db);
  if (settled !== null) return settled;
  const row = await db
    .selectFrom('deployment_events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

/** The rows up to the settled id (ascending rows). */
function settledPrefix(rows: EventRow[], settled: number | null): EventBatch {
  if (settled === null) return { rows, held: false };
  const end = rows.findIndex((row) => Number(row.id) > settled);
  return end === -1 ? { rows, held: false } : { rows: rows.slice(0, end), held: true };
}

/**
 * The highest event id at or below which every id is settled: committed (and visible to any
 * read that starts after this one) or never to be. Null on SQLite, where one writer at a time
 * commits ids in order. On PostgreSQL, ids are drawn at insert time and transactions commit
 * in any order; each transaction writing events holds a shared advisory lock naming the
 * sequence's value before its first id (migration 027). The sequence is read first, then the
 * locks (the lateral join orders them): an id drawn before the first read belongs to a
 * transaction that either shows its lock in the second or has ended, and PostgreSQL makes a
 * commit visible before it releases the locks. The caller's read of rows, a later statement,
 * sees every committed id up to the answer. docs/architecture.md, "Event ids without gaps".
 */
async function settledEventId(db: Executor): Promise<number | null> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return null;
  const namespace = sql.lit(EVENT_FENCE_NAMESPACE);
  const { rows } = await sql<{ settled: string }>`
    SELECT least(s.drawn, w.floor) AS settled
    FROM (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS drawn FROM deployment_events_id_seq) s
    CROSS JOIN LATERAL (
      SELECT min((l.classid::bigint - ${namespace}) * 2147483648 + l.objid::bigint) AS floor
      FROM pg_locks l
      WHERE s.drawn IS NOT NULL AND l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid::bigint >= ${namespace}
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    ) w`.execute(db);
  return Number(rows[0]!.settled);
}
