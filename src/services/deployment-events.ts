import type { DeploymentEvent } from '../contract/logs.js';
import { deploymentNotFound } from '../domain/errors.js';
import { isTerminal } from '../domain/revision-status.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { watchDeployment } from '../events/watch.js';
import * as deployments from '../store/repositories/deployments.js';
import * as events from '../store/repositories/events.js';
import type { EventRow } from '../store/repositories/events.js';
import * as revisions from '../store/repositories/revisions.js';
import type { ServiceDeps } from './index.js';

const PAGE_SIZE = 500;
/** Bus messages are best effort (a PostgreSQL listener may reconnect), so waiters also look on their own. */
const RECHECK_MS = 2000;
/**
 * Events waiting behind a lower id still being written (PostgreSQL) are looked at again this
 * soon: that writer's announcement may name another deployment, and writes take milliseconds.
 */
export const HELD_RECHECK_MS = 25;

/** Following a deployment as it changes: its event stream, and waiting for a revision to finish. */
export function createDeploymentEventService({ db, bus }: ServiceDeps) {
  // Aborted when the server shuts down, so open streams and long polls end instead of
  // keeping the HTTP server (and the database) from closing.
  const closing = new AbortController();

  async function deploymentOrFail(scope: WorkspaceScope, deploymentId: string) {
    const row = await deployments.findDeployment(db, scope.workspaceId, deploymentId);
    if (!row) throw deploymentNotFound(deploymentId);
    return row;
  }

  return {
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
      const watcher = watchDeployment(bus, deploymentId, stop);
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
      onEvent: (event: DeploymentEvent) => void | Promise<void>,
      signal: AbortSignal,
    ): Promise<void> {
      await deploymentOrFail(scope, deploymentId);
      const stop = AbortSignal.any([signal, closing.signal]);
      const watcher = watchDeployment(bus, deploymentId, stop);
      let cursor = afterId;
      try {
        while (!stop.aborted) {
          const { rows, held } = await events.eventsAfter(db, deploymentId, cursor, PAGE_SIZE);
          for (const row of rows) {
            if (stop.aborted) return;
            await onEvent(streamEvent(row));
            cursor = Number(row.id);
          }
          if (rows.length === PAGE_SIZE) continue;
          // Nothing new: a deleted deployment (its events cascade away) ends the stream.
          if (rows.length === 0 && !held && !(await deployments.findDeployment(db, scope.workspaceId, deploymentId))) return;
          await watcher.next(held ? HELD_RECHECK_MS : RECHECK_MS);
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

/** An event row as the streams send it (the workspace's adds the deployment to `data`). */
export function streamEvent(row: EventRow): DeploymentEvent {
  const id = Number(row.id);
  if (row.kind === 'status') {
    return { id, event: 'status', data: { revision_id: row.revision_id, status: row.status ?? 'UNKNOWN', message: row.message, at: row.created_at } };
  }
  if (row.kind === 'push_ignored_pinned') {
    return {
      id,
      event: 'push_ignored_pinned',
      data: { revision_id: row.revision_id, commit: row.commit_sha ?? '', message: row.message ?? '', at: row.created_at },
    };
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
