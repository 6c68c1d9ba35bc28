import { parseDateTime } from '../domain/datetime.js';
import { deploymentNotFound, invalidField, revisionNotFound } from '../domain/errors.js';
import { levelsAtOrAbove } from '../domain/log-levels.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import * as deployments from '../store/repositories/deployments.js';
import * as events from '../store/repositories/events.js';
import type { EventRow } from '../store/repositories/events.js';
import * as revisions from '../store/repositories/revisions.js';
import type { ServiceDeps } from './index.js';
import { PageBudget } from './page-size.js';
import type { LogLineView, LogPageView, TimelineEntryView } from '../contract/logs.js';

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

/** Log lines and the status timeline of a deployment's revisions, a page at a time. */
export function createLogService({ db }: ServiceDeps) {
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
    async list(scope: WorkspaceScope, request: LogRequest): Promise<LogPageView> {
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
        levels: request.level ? levelsAtOrAbove(request.level) : undefined,
        query: request.query || undefined,
        startTime,
        endTime,
      });
      const page = new PageBudget<LogLineView>();
      let cut = false;
      for (const row of rows) {
        if (!page.add(logLine(row))) {
          cut = true;
          break;
        }
      }
      const last = page.items.at(-1);
      return { logs: page.items, next_offset: (cut || rows.length === request.limit) && last ? last.id : null };
    },

    async timeline(scope: WorkspaceScope, deploymentId: string, revisionId: string): Promise<TimelineEntryView[]> {
      await deploymentOrFail(scope, deploymentId);
      await revisionOrFail(deploymentId, revisionId);
      const rows = await events.revisionTimeline(db, revisionId);
      return rows.map((row) => ({ status: row.status ?? 'UNKNOWN', message: row.message, at: row.created_at }));
    },
  };
}

function logLine(row: EventRow): LogLineView {
  return {
    id: String(row.id),
    timestamp: Date.parse(row.created_at),
    level: row.level ?? 'INFO',
    message: row.message ?? '',
    revision_id: row.revision_id,
  };
}

/** A cursor is the id of the last line returned; an empty one means "from the start". */
function parseCursor(offset: string | null | undefined, part: 'query' | 'body'): number | undefined {
  if (offset == null || offset === '') return undefined;
  const id = /^\d{1,15}$/.test(offset) ? Number(offset) : NaN;
  if (!Number.isSafeInteger(id)) {
    throw invalidField({
      type: 'value_error',
      loc: [part, 'offset'],
      msg: 'Value error, offset must be a next_offset value from a previous answer',
      input: offset,
    });
  }
  return id;
}

/**
 * ISO 8601 in (strictly: domain/datetime.ts), the stored form (UTC, milliseconds, `Z`)
 * out, so text comparison in SQL orders correctly.
 */
export function parseTime(value: string | null | undefined, part: 'query' | 'body', name: string): string | undefined {
  if (value == null || value === '') return undefined;
  const time = parseDateTime(value);
  if (time === undefined || Number.isNaN(new Date(time).getTime())) {
    throw invalidField({ type: 'datetime_parsing', loc: [part, name], msg: 'Input should be a valid datetime', input: value });
  }
  return new Date(time).toISOString();
}
