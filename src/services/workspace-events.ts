import type { WorkspaceEventPageView, WorkspaceEventQueryInput, WorkspaceEventView, EventName } from '../contract/workspace-events.js';
import { deploymentNotFound } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { watchBus } from '../events/watch.js';
import * as deployments from '../store/repositories/deployments.js';
import * as events from '../store/repositories/events.js';
import type { EventRow } from '../store/repositories/events.js';
import { HELD_RECHECK_MS, streamEvent } from './deployment-events.js';
import type { ServiceDeps } from './index.js';

const PAGE_SIZE = 500;
/** Bus messages are best effort (a PostgreSQL listener may reconnect), so streams also look on their own. */
const RECHECK_MS = 2000;

export interface WorkspaceEventFilters {
  deploymentId?: string;
  event?: EventName;
}

/**
 * The events of every deployment of a workspace (status changes, log lines, pushes ignored
 * while pinned), as a page and as a stream: what a dashboard or a script watches to see
 * the whole workspace move. The same events and ids as each deployment's own stream.
 */
export function createWorkspaceEventService({ db, bus }: ServiceDeps) {
  // Aborted when the server shuts down, so open streams end instead of holding it open.
  const closing = new AbortController();

  /** A filter on a deployment of another workspace (or none) answers 404, as the deployment's own routes do. */
  async function checkFilters(scope: WorkspaceScope, filters: WorkspaceEventFilters): Promise<void> {
    if (filters.deploymentId && !(await deployments.findDeployment(db, scope.workspaceId, filters.deploymentId))) {
      throw deploymentNotFound(filters.deploymentId);
    }
  }

  const read = (scope: WorkspaceScope, filters: WorkspaceEventFilters, page: { order: 'asc' | 'desc'; cursor?: number; limit: number }) =>
    events.workspaceEvents(db, {
      workspaceId: scope.workspaceId,
      ...(filters.deploymentId ? { deploymentId: filters.deploymentId } : {}),
      ...(filters.event ? { kind: filters.event } : {}),
      ...page,
    });

  return {
    checkFilters,

    async list(scope: WorkspaceScope, query: WorkspaceEventQueryInput): Promise<WorkspaceEventPageView> {
      const filters = { deploymentId: query.deployment_id, event: query.event };
      await checkFilters(scope, filters);
      const cursor = query.cursor === undefined ? undefined : Number(query.cursor);
      // One more than asked tells whether another page follows.
      const { rows } = await read(scope, filters, { order: query.order, limit: query.limit + 1, ...(cursor === undefined ? {} : { cursor }) });
      const page = rows.slice(0, query.limit);
      return { resources: page.map(workspaceEvent), next_cursor: rows.length > query.limit ? String(page.at(-1)!.id) : null };
    },

    /** The newest event id: a stream asked for no history starts after it. */
    latestId: () => events.latestEventId(db),

    /**
     * Sends the workspace's events after `afterId` in order,
     * then each new one as it is announced, until the signal aborts. `onEvent` may return a
     * promise to slow the reading down to the client's pace.
     */
    async stream(
      scope: WorkspaceScope,
      filters: WorkspaceEventFilters,
      afterId: number,
      onEvent: (event: WorkspaceEventView) => void | Promise<void>,
      signal: AbortSignal,
    ): Promise<void> {
      await checkFilters(scope, filters);
      const stop = AbortSignal.any([signal, closing.signal]);
      // Any deployment's news may be this workspace's: the read below decides.
      const watcher = watchBus(
        bus,
        (message) => message.topic === 'deployment' && (!filters.deploymentId || message.deploymentId === filters.deploymentId),
        stop,
      );
      let cursor = afterId;
      try {
        while (!stop.aborted) {
          const { rows, held } = await read(scope, filters, { order: 'asc', cursor, limit: PAGE_SIZE });
          for (const row of rows) {
            if (stop.aborted) return;
            await onEvent(workspaceEvent(row));
            cursor = Number(row.id);
          }
          if (rows.length < PAGE_SIZE) await watcher.next(held ? HELD_RECHECK_MS : RECHECK_MS);
        }
      } finally {
        watcher.close();
      }
    },

    /** Ends every stream; called when the HTTP server closes. */
    close(): void {
      closing.abort();
    },
  };
}

function workspaceEvent(row: EventRow): WorkspaceEventView {
  const { id, event, data } = streamEvent(row);
  return { id, event, data: { deployment_id: row.deployment_id, ...data } } as WorkspaceEventView;
}
