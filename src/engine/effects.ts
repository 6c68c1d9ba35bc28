import type { RevisionStatus } from '../domain/revision-status.js';
import { announce, type LogLine, type LogType, recordEvents } from '../events/recorder.js';
import { deploymentServes, servingColumns } from '../lifecycle/outcomes.js';
import { moveRevision as lifecycleMove } from '../lifecycle/revisions.js';
import { type Executor, nowIso } from '../store/database.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import type { RevisionRecord, TransitionSet } from '../store/repositories/revisions.js';
import { finishStepRuns, type StepRunEnd } from '../store/repositories/step-runs.js';
import type { WorkContext } from './context.js';

/**
 * What the engine decided about the revision it works on but has not written yet: steps
 * that need nothing from outside (CREATING → QUEUED → AWAITING_DEPLOY → DEPLOYING), log
 * lines, and step runs that ended. They are written together, in one transaction, before
 * anything leaves the process (a driver starts, the worker reads again or lets go): a
 * crash before that loses only decisions the next worker makes again from the same status.
 */
export interface Pending {
  revision: RevisionRecord;
  /** The revision's status in the database. */
  from: RevisionStatus;
  hops: { status: RevisionStatus; message: string | null; at: string }[];
  set: TransitionSet;
  logs: LogLine[];
  ended: StepRunEnd[];
}

/**
 * The engine's delayed writes for one leased deployment: what is pending, the timer that
 * writes log lines alone, the chain that keeps writes in order, and whether a write was
 * refused. Only the functions of this file change them.
 */
export class DelayedWrites {
  #pending: Pending | undefined;
  #logTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<unknown> = Promise.resolve();
  #stale = false;

  /** A write of pending moves was refused since the last `trustAgain`: what this process knows of the revision is wrong. */
  get stale(): boolean {
    return this.#stale;
  }

  /** The worker reads again: what it knows is the database's. */
  trustAgain(): void {
    this.#stale = false;
  }

  /** Whether `revision` has writes waiting. */
  holds(revision: RevisionRecord): boolean {
    return this.#pending?.revision === revision;
  }

  /** Whether another revision than `revision` has writes waiting (then `revision`'s are written alone). */
  holdsOther(revision: RevisionRecord): boolean {
    return this.#pending !== undefined && this.#pending.revision !== revision;
  }

  pendingFor(revision: RevisionRecord): Pending {
    if (this.#pending && this.#pending.revision !== revision)
      throw new Error(`engine: revision ${revision.id} written while ${this.#pending.revision.id} has pending writes`);
    this.#pending ??= { revision, from: revision.status, hops: [], set: {}, logs: [], ended: [] };
    return this.#pending;
  }

  /** Runs `write` after `ms` unless a write comes first. */
  writeSoon(ms: number, write: () => Promise<unknown>): void {
    this.#logTimer ??= setTimeout(() => {
      this.#logTimer = undefined;
      void write();
    }, ms);
  }

  /** Takes what is pending for `write`, one write at a time and in order: a log flush must not overtake the status change after it. */
  writeNext<T>(write: (pending: Pending | undefined) => Promise<T>): Promise<T> {
    const run = this.#flushing.then(() => {
      const pending = this.#pending;
      this.#pending = undefined;
      clearTimeout(this.#logTimer);
      this.#logTimer = undefined;
      return write(pending);
    });
    this.#flushing = run.catch(() => undefined);
    return run;
  }

  refused(): void {
    this.#stale = true;
  }
}

/**
 * Takes the revision a status further in memory; `flush` writes it. For steps whose
 * outcome nobody outside the process sees before the next write.
 */
export function hop(ctx: WorkContext, revision: RevisionRecord, to: RevisionStatus, message: string | null, set?: TransitionSet): void {
  const pending = ctx.writes.pendingFor(revision);
  const at = nowIso();
  pending.hops.push({ status: to, message, at });
  Object.assign(pending.set, set ?? {});
  Object.assign(revision, set ?? {}, { status: to, status_message: message, updated_at: at });
}

/**
 * Moves a revision to its next status through the lifecycle, fenced by our lease, with
 * whatever is pending for it and `alongside` (run in the change's transaction, only if it
 * goes through), and keeps the in-memory record in step. False: someone else moved it
 * first, or our lease is gone; either way the worker re-reads and decides again.
 */
export async function moveRevision(
  ctx: WorkContext,
  revision: RevisionRecord,
  to: RevisionStatus,
  message: string | null,
  set?: TransitionSet,
  alongside?: (trx: Executor) => Promise<void>,
): Promise<boolean> {
  if (!ctx.writes.holds(revision)) {
    // Nothing waits to be written with it (or it is another revision, one the queue skips or queues).
    const result = await lifecycleMove(ctx, revision, to, {
      message,
      fence: leaseFence(ctx),
      set,
      origin: ctx.settings.workerId,
      listenerId: ctx.lastRead.listenerId,
      alongside,
    });
    if (result.outcome !== 'ok') return false;
    Object.assign(revision, set ?? {}, { status: to, status_message: message, updated_at: result.at });
    return true;
  }
  hop(ctx, revision, to, message, set);
  return (await flush(ctx, alongside)) !== 'stale';
}

/** A log line of the revision: written with its next status change, or within `settings.logFlushMs`. */
export async function writeLog(ctx: WorkContext, revision: RevisionRecord, logType: LogType, level: string, message: string): Promise<void> {
  if (ctx.writes.holdsOther(revision)) {
    await recordEvents(ctx.db, revision.deployment_id, revision.id, [{ logType, level, message, at: nowIso() }], []);
    announce(ctx.bus, revision.deployment_id, ctx.settings.workerId);
    return;
  }
  ctx.writes.pendingFor(revision).logs.push({ logType, level, message, at: nowIso() });
  ctx.writes.writeSoon(ctx.settings.logFlushMs, () => flush(ctx).catch((error: unknown) => ctx.logger.warn({ err: error }, 'could not write log lines')));
}

/**
 * Lines relayed from another machine (a build runner's log batches), written at once in one
 * transaction with `claim`, and only if `claim` answers true there: the relay's position
 * moves with its lines, so no engine writes them twice. What waits to be written goes first,
 * so the build log keeps its order.
 */
export async function writeLogsOnce(
  ctx: WorkContext,
  revision: RevisionRecord,
  logType: LogType,
  lines: readonly { level: string; message: string }[],
  claim: (trx: Executor) => Promise<boolean>,
): Promise<boolean> {
  await flush(ctx);
  const at = nowIso();
  const logs = lines.map((line) => ({ logType, level: line.level, message: line.message, at }));
  const written = await ctx.db.transaction().execute(async (trx) => {
    if (!(await claim(trx))) return false;
    if (logs.length > 0) await recordEvents(trx, revision.deployment_id, revision.id, logs, []);
    return true;
  });
  if (written && logs.length > 0) announce(ctx.bus, revision.deployment_id, ctx.settings.workerId);
  return written;
}

/** A step run ended; written with what follows. */
export function endStepRun(ctx: WorkContext, revision: RevisionRecord, end: StepRunEnd): void {
  ctx.writes.pendingFor(revision).ended.push(end);
}

/**
 * Writes what is pending in one transaction, with `alongside` when given (run only if the
 * status change succeeds). `stale`: the status change was refused (moved by someone else,
 * or our lease is gone): the in-memory revision is wrong and the worker must read again;
 * the log lines and step runs are written all the same.
 */
export async function flush(ctx: WorkContext, alongside?: (db: Executor) => Promise<void>): Promise<'ok' | 'stale'> {
  return ctx.writes.writeNext((pending) => writePending(ctx, pending, alongside));
}

async function writePending(ctx: WorkContext, pending: Pending | undefined, alongside?: (db: Executor) => Promise<void>): Promise<'ok' | 'stale'> {
  const last = pending?.hops.at(-1);
  if (!pending || !last) {
    const writes = [
      ...(pending && pending.logs.length > 0
        ? [(db: Executor) => recordEvents(db, pending.revision.deployment_id, pending.revision.id, pending.logs, [])]
        : []),
      ...(pending && pending.ended.length > 0 ? [(db: Executor) => finishStepRuns(db, pending.ended)] : []),
      ...(alongside ? [alongside] : []),
    ];
    // A single statement needs no transaction of its own.
    if (writes.length === 1) await writes[0]?.(ctx.db);
    else if (writes.length > 1)
      await ctx.db.transaction().execute(async (trx) => {
        for (const write of writes) await write(trx);
      });
    if (pending && pending.logs.length > 0) announce(ctx.bus, pending.revision.deployment_id, ctx.settings.workerId);
    return 'ok';
  }
  const { revision } = pending;
  const result = await lifecycleMove(
    ctx,
    { id: revision.id, deployment_id: revision.deployment_id, status: pending.from, source: revision.source },
    last.status,
    {
      message: last.message,
      via: pending.hops.slice(0, -1),
      logs: pending.logs,
      set: Object.keys(pending.set).length > 0 ? pending.set : undefined,
      fence: leaseFence(ctx),
      origin: ctx.settings.workerId,
      listenerId: ctx.lastRead.listenerId,
      alongside: async (trx) => {
        if (pending.ended.length > 0) await finishStepRuns(trx, pending.ended);
        await alongside?.(trx);
      },
    },
  );
  if (result.outcome === 'ok') return 'ok';
  ctx.writes.refused();
  // Nothing of the change was written: the lines and step runs still tell what happened.
  await writePending(ctx, { ...pending, hops: [] });
  return 'stale';
}

/**
 * DEPLOYING → DEPLOYED, and the deployment now serves this revision (lifecycle/outcomes.ts),
 * in one transaction.
 */
export async function markDeployed(
  ctx: WorkContext,
  deployment: DeploymentRecord,
  revision: RevisionRecord,
  running: { url: string; handle: string },
): Promise<boolean> {
  hop(ctx, revision, 'DEPLOYED', `Serving at ${running.url}.`, { url: running.url, runtime_handle: running.handle });
  const serving = { revisionId: revision.id, url: running.url, fence: leaseFence(ctx) };
  const outcome = await flush(ctx, async (trx) => {
    await deploymentServes(ctx, trx, deployment, serving);
  });
  if (outcome !== 'ok') return false;
  Object.assign(deployment, servingColumns(deployment, revision.id, running.url));
  return true;
}

export function leaseFence(ctx: WorkContext) {
  return { kind: 'lease' as const, worker: ctx.settings.workerId };
}
