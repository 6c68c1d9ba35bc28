import { type Insertable, type Selectable, sql } from 'kysely';
import type { Executor } from '../database.js';
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

export async function listLogs(db: Executor, q: LogQuery): Promise<EventRow[]> {
  let query = db
    .selectFrom('deployment_events')
    .selectAll()
    .where('deployment_id', '=', q.deploymentId)
    .where('kind', '=', 'log')
    .where('log_type', '=', q.logType);
  if (q.revisionId) query = query.where('revision_id', '=', q.revisionId);
  if (q.afterId !== undefined) query = query.where('id', q.order === 'asc' ? '>' : '<', q.afterId);
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

/** Events of a deployment after an id, oldest first: what an SSE stream sends next. */
export async function eventsAfter(db: Executor, deploymentId: string, afterId: number, limit: number): Promise<EventRow[]> {
  return db
    .selectFrom('deployment_events')
    .selectAll()
    .where('deployment_id', '=', deploymentId)
    .where('id', '>', afterId)
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
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

/** Events of every deployment of a workspace, in id order: the workspace's event page and stream. */
export async function workspaceEvents(db: Executor, q: WorkspaceEventQuery): Promise<EventRow[]> {
  let query = db
    .selectFrom('deployment_events as e')
    .innerJoin('deployments as d', 'd.id', 'e.deployment_id')
    .selectAll('e')
    .where('d.workspace_id', '=', q.workspaceId);
  if (q.deploymentId) query = query.where('e.deployment_id', '=', q.deploymentId);
  if (q.kind) query = query.where('e.kind', '=', q.kind);
  if (q.cursor !== undefined) query = query.where('e.id', q.order === 'asc' ? '>' : '<', q.cursor);
  return query.orderBy('e.id', q.order).limit(q.limit).execute();
}

/** The newest event's id of all (0 when none): where a stream that asks for no history starts. */
export async function latestEventId(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('deployment_events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}
