import type { RevisionStatus } from '../domain/revision-status.js';
import type { Executor } from '../store/database.js';
import { nowIso } from '../store/database.js';
import { insertEvent, insertEvents } from '../store/repositories/events.js';
import type { EventBus } from './bus.js';

export type LogType = 'build' | 'deploy';

/**
 * Writes a log line of a revision and tells listeners. Call `announce` after the
 * transaction that wrote events commits (or pass the plain database, then it is at once).
 */
export async function recordLog(
  db: Executor,
  line: { deploymentId: string; revisionId: string; logType: LogType; level: string; message: string },
): Promise<number> {
  return insertEvent(db, {
    deployment_id: line.deploymentId,
    revision_id: line.revisionId,
    kind: 'log',
    log_type: line.logType,
    level: line.level,
    status: null,
    message: line.message,
    created_at: nowIso(),
  });
}

/** Records a revision's status change in its deployment's event stream (its timeline). */
export async function recordStatus(
  db: Executor,
  change: { deploymentId: string; revisionId: string; status: RevisionStatus; message: string | null; at: string },
): Promise<number> {
  return insertEvent(db, {
    deployment_id: change.deploymentId,
    revision_id: change.revisionId,
    kind: 'status',
    log_type: null,
    level: null,
    status: change.status,
    message: change.message,
    created_at: change.at,
  });
}

/**
 * A push that a pinned deployment recorded but built nothing for: an event of its own
 * (`push_ignored_pinned`) naming the commit and the revision the deployment is pinned to.
 */
export async function recordPushIgnored(
  db: Executor,
  ignored: { deploymentId: string; pinnedRevisionId: string; commit: string; message: string },
): Promise<number> {
  return insertEvent(db, {
    deployment_id: ignored.deploymentId,
    revision_id: ignored.pinnedRevisionId,
    kind: 'push_ignored_pinned',
    log_type: null,
    level: 'INFO',
    status: null,
    message: ignored.message,
    commit_sha: ignored.commit,
    created_at: nowIso(),
  });
}

/** A log line kept to be written later, with when it was said. */
export interface LogLine {
  logType: LogType;
  level: string;
  message: string;
  at: string;
}

/** Log lines, then status changes, of one revision: one insert, in that order. */
export async function recordEvents(
  db: Executor,
  deploymentId: string,
  revisionId: string,
  logs: readonly LogLine[],
  statuses: readonly { status: RevisionStatus; message: string | null; at: string }[],
): Promise<void> {
  const common = { deployment_id: deploymentId, revision_id: revisionId };
  await insertEvents(db, [
    ...logs.map((line) => ({
      ...common,
      kind: 'log' as const,
      log_type: line.logType,
      level: line.level,
      status: null,
      message: line.message,
      created_at: line.at,
    })),
    ...statuses.map((change) => ({
      ...common,
      kind: 'status' as const,
      log_type: null,
      level: null,
      status: change.status,
      message: change.message,
      created_at: change.at,
    })),
  ]);
}

export function announce(bus: EventBus, deploymentId: string, origin?: string): void {
  bus.publish(origin === undefined ? { topic: 'deployment', deploymentId } : { topic: 'deployment', deploymentId, origin });
}

/** A listener's desired state changed (its generation grew): agents waiting on it look again. */
export function announceListener(bus: EventBus, listenerId: string): void {
  bus.publish({ topic: 'listener', deploymentId: '', listenerId });
}

/** The webhook outbox has something new (docs/webhooks.md): deliverers look now rather than at their next tick. */
export function announceWebhooks(bus: EventBus): void {
  bus.publish({ topic: 'webhooks', deploymentId: '' });
}
