import type { EventBus } from '../events/bus.js';
import { deploymentNotFound, invalidField, revisionNotFound } from '../domain/errors.js';
import { isTerminal } from '../domain/revision-status.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import * as deployments from '../store/repositories/deployments.js';
import * as events from '../store/repositories/events.js';
import type { EventRow } from '../store/repositories/events.js';
import * as revisions from '../store/repositories/revisions.js';
import type { ServiceDeps } from './index.js';

/** Least to most severe: a `level` filter keeps that level and everything after it. */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;

export interface LogRequest {
  deploymentId: string;
  /** Absent: every revision of the deployment. */
  revisionId?: string;
  logType: 'build' | 'deploy';
  order: 'asc' | 'desc';
  limit: number;
  /** Opaque cursor from a previous `next_offset`. */
  offset?: string | null;
  level?: string | null;
  query?: string | null;
  startTime?: string | null;
  endTime?: string | null;
  /** Where the request's fields came from, for the `loc` of a 422. */
  part?: 'query' | 'body';
}

export interface LogLine {
  id: string;
  timestamp: number;
  level: string;
  message: string;
  revision_id: string | null;
}

export interface LogPage {
  logs: LogLine[];
  next_offset: string | null;
}

export interface TimelineEntry {
  status: string;
  message: string | null;
  at: string;
}

export type StreamEvent =
  | { id: number; event: 'status'; data: { revision_id: string | null; status: string; message: string | null; at: string } }
  | { id: number; event: 'log'; data: { revision_id: string | null; type: string | null; level: string; message: string; timestamp: number } };

const PAGE_SIZE = 500;
/** Bus messages are best effort (a PostgreSQL listener may reconnect), so waiters also look on their own. */
const RECHECK_MS = 2000;

export function createLogService({ db, bus }: ServiceDeps) {
  // Aborted when the server shuts down, so open streams and long polls end instead of
  // keeping the HTTP server (and the database) from closing.
  const closing = new AbortController();

  async function deploymentOrFail(scope: WorkspaceScope, deploymentId: string) {
    const row = await deployments.findDeployment(db, scope.workspaceId, deploymentId);
    if (!row) throw deploymentNotFound(deploymentId);
    return row;
  }

  async function revisionOrFail(deploymentId: string, revisionId: string) {
    const row = await revisions.findRevision(db, deploymentId, revisionId);
    if (!row) throw revisionNotFound(revisionId);
    return row;
  }

  return {
    async list(scope: WorkspaceScope, request: LogRequest): Promise<LogPage> {
      const part = request.part ?? 'query';
      const afterId = parseCursor(request.offset, part);
      const startTime = parseTime(request.startTime, part, 'start_time');
      const endTime = parseTime(request.endTime, part, 'end_time');
      await deploymentOrFail(scope, request.deploymentId);
      if (request.revisionId) await revisionOrFail(request.deploymentId, request.revisionId);
      const rows = await events.listLogs(db, {
        deploymentId: request.deploymentId,
        revisionId: request.revisionId,
        logType: request.logType,
        order: request.order,
        limit: request.limit,
        afterId,
        levels: request.level ? levelsFrom(request.level) : undefined,
        query: request.query || undefined,
        startTime,
        endTime,
      });
      const last = rows.at(-1);
      return { logs: rows.map(logLine), next_offset: rows.length < request.limit || !last ? null : String(last.id) };
    },

    async timeline(scope: WorkspaceScope, deploymentId: string, revisionId: string): Promise<TimelineEntry[]> {
      await deploymentOrFail(scope, deploymentId);
      await revisionOrFail(deploymentId, revisionId);
      const rows = await events.revisionTimeline(db, revisionId);
      return rows.map((row) => ({ status: row.status ?? 'UNKNOWN', message: row.message, at: row.created_at }));
    },

    /** Throws 404 unless the deployment is in the caller's workspace; lets a stream answer errors before it starts. */
    async ensureDeployment(scope: WorkspaceScope, deploymentId: string): Promise<void> {
      await deploymentOrFail(scope, deploymentId);
    },

    /**
     * Returns once the revision is terminal (or gone: the caller's read then answers 404),
     * at the deadline, or when the client leaves. Only short reads touch the database.
     */
    async waitForTerminal(scope: WorkspaceScope, deploymentId: string, revisionId: string, seconds: number, signal: AbortSignal): Promise<void> {
      await deploymentOrFail(scope, deploymentId);
      const deadline = Date.now() + seconds * 1000;
      const stop = AbortSignal.any([signal, closing.signal]);
      const watcher = watch(bus, deploymentId, stop);
      try {
        for (;;) {
          const row = await revisions.findRevision(db, deploymentId, revisionId);
          const left = deadline - Date.now();
          if (!row || isTerminal(row.status) || left <= 0 || stop.aborted) return;
          await watcher.next(Math.min(left, RECHECK_MS));
        }
      } finally {
        watcher.close();
      }
    },

    /**
     * Sends the deployment's events after `afterId` in order, then each new one as it is
     * announced, until the signal aborts or the deployment is deleted. `onEvent` may
     * return a promise to slow the reading down to the client's pace.
     */
    async stream(
      scope: WorkspaceScope,
      deploymentId: string,
      afterId: number,
      onEvent: (event: StreamEvent) => void | Promise<void>,
      signal: AbortSignal,
    ): Promise<void> {
      await deploymentOrFail(scope, deploymentId);
      const stop = AbortSignal.any([signal, closing.signal]);
      const watcher = watch(bus, deploymentId, stop);
      let cursor = afterId;
      try {
        while (!stop.aborted) {
          const rows = await events.eventsAfter(db, deploymentId, cursor, PAGE_SIZE);
          for (const row of rows) {
            if (stop.aborted) return;
            await onEvent(streamEvent(row));
            cursor = Number(row.id);
          }
          if (rows.length === PAGE_SIZE) continue;
          // Nothing new: a deleted deployment (its events cascade away) ends the stream.
          if (rows.length === 0 && !(await deployments.findDeployment(db, scope.workspaceId, deploymentId))) return;
          await watcher.next(RECHECK_MS);
        }
      } finally {
        watcher.close();
      }
    },

    /** Ends every stream and long poll; called when the HTTP server closes. */
    close(): void {
      closing.abort();
    },

    isClosing(): boolean {
      return closing.signal.aborted;
    },
  };
}

export type LogService = ReturnType<typeof createLogService>;

/**
 * Remembers bus announcements for one deployment between reads, so one that arrives
 * while the database is being read is not lost.
 */
function watch(bus: EventBus, deploymentId: string, signal: AbortSignal) {
  let announced = false;
  let wake: (() => void) | undefined;
  const unsubscribe = bus.subscribe((message) => {
    if (message.deploymentId !== deploymentId) return;
    announced = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  return {
    /** Resolves at once if something was announced since the last call, else at the next announcement, after `ms` or on abort. */
    async next(ms: number): Promise<void> {
      if (!announced && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => wake?.(), ms);
          wake = () => {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          };
        });
      }
      announced = false;
    },
    close(): void {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
      wake?.();
    },
  };
}

function logLine(row: EventRow): LogLine {
  return {
    id: String(row.id),
    timestamp: Date.parse(row.created_at),
    level: row.level ?? 'INFO',
    message: row.message ?? '',
    revision_id: row.revision_id,
  };
}

function streamEvent(row: EventRow): StreamEvent {
  const id = Number(row.id);
  if (row.kind === 'status') {
    return { id, event: 'status', data: { revision_id: row.revision_id, status: row.status ?? 'UNKNOWN', message: row.message, at: row.created_at } };
  }
  return {
    id,
    event: 'log',
    data: {
      revision_id: row.revision_id,
      type: row.log_type,
      level: row.level ?? 'INFO',
      message: row.message ?? '',
      timestamp: Date.parse(row.created_at),
    },
  };
}

function levelsFrom(level: string): string[] {
  const index = (LOG_LEVELS as readonly string[]).indexOf(level.toUpperCase());
  return index < 0 ? [] : LOG_LEVELS.slice(index);
}

/** A cursor is the id of the last line returned; an empty one means "from the start". */
function parseCursor(offset: string | null | undefined, part: 'query' | 'body'): number | undefined {
  if (offset == null || offset === '') return undefined;
  const id = /^\d{1,15}$/.test(offset) ? Number(offset) : NaN;
  if (!Number.isSafeInteger(id)) {
    throw invalidField({ type: 'value_error', loc: [part, 'offset'], msg: 'Value error, offset must be a next_offset value from a previous answer', input: offset });
  }
  return id;
}

/**
 * ISO 8601 in, the stored form (UTC, milliseconds, `Z`) out, so text comparison in SQL
 * orders correctly. A time without a zone is UTC, as Python clients send naive UTC times.
 */
export function parseTime(value: string | null | undefined, part: 'query' | 'body', name: string): string | undefined {
  if (value == null || value === '') return undefined;
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/i.test(value) || !/\d{2}:\d{2}/.test(value) ? value : `${value}Z`;
  const time = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(zoned) : NaN;
  if (Number.isNaN(time)) {
    throw invalidField({ type: 'datetime_parsing', loc: [part, name], msg: 'Input should be a valid datetime', input: value });
  }
  return new Date(time).toISOString();
}
