import type { RevisionStatus } from '../domain/revision-status.js';
import type { LogType } from '../events/recorder.js';
import { observeStep } from '../observability/metrics.js';
import { nowIso } from '../store/database.js';
import { insertBerthAuditRow } from '../store/repositories/audit.js';
import type { RevisionRecord } from '../store/repositories/revisions.js';
import { startStepRun } from '../store/repositories/step-runs.js';
import { type EngineStepContext, StopSignal, stopReasonOf, type WorkContext } from './context.js';
import { DriverError, type LogLevel, type StepContext } from './drivers/types.js';
import { noteRevision } from '../lifecycle/revisions.js';
import { endStepRun, flush, leaseFence, moveRevision, writeLog, writeLogsOnce } from './effects.js';

/** What the deployment loop does after one advance: go on with this revision, look at the next, or leave. */
export type Next = 'again' | 'next' | 'leave';

const CLEANUP_GRACE_MS = 10_000;

export interface StepSpec {
  name: 'build' | 'deploy' | 'database';
  /** Which of the revision's logs its lines go to. */
  logType: LogType;
  failedStatus: RevisionStatus;
  timeoutMs: number;
  /** Where a user raises the limit. */
  timeoutSetting: string;
}

/** `started: false`: the step never ran, because what led to it could not be written (the revision moved, or the lease is gone). */
type StepResult<T> = { ok: true; value: T } | { ok: false; next: Next; started: boolean };

/**
 * Runs one driver call with its timeout, its log stream and a record in engine_step_runs.
 * What the engine decided before the step is written with the record of its start (a
 * driver must never act for a status only this process knows), and how it ended with
 * what follows it.
 * A driver failure or a timeout ends the revision in the step's *_FAILED status with a
 * message a person can act on; a stop (shutdown, lost lease, interruption, delete) leaves
 * the status for whoever continues.
 */
export async function runStep<T>(
  ctx: WorkContext,
  revision: RevisionRecord,
  spec: StepSpec,
  body: (step: EngineStepContext) => Promise<T>,
): Promise<StepResult<T>> {
  let runId = 0;
  const written = await flush(ctx, async (db) => {
    runId = await startStepRun(db, { revisionId: revision.id, step: spec.name, worker: ctx.settings.workerId, at: nowIso() });
  });
  if (written === 'stale') return { ok: false, next: 'again', started: false };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new StopSignal('timeout')), spec.timeoutMs);
  const forward = () => controller.abort(ctx.work.signal.reason);
  ctx.work.signal.addEventListener('abort', forward, { once: true });
  ctx.step = { revisionId: revision.id, controller };
  const started = performance.now();
  const elapsedSeconds = () => (performance.now() - started) / 1000;
  // Set while the step's slot is lent (awayFromSlot): the step ends only once it is taken back.
  let takeBack: (() => Promise<void>) | undefined;
  const step: EngineStepContext = {
    signal: controller.signal,
    log: (level: LogLevel, message: string) => writeLog(ctx, revision, spec.logType, level, message),
    logOnce: (lines, claim) => writeLogsOnce(ctx, revision, spec.logType, lines, claim),
    awayFromSlot: async (wait) => {
      takeBack ??= ctx.lendSlot?.();
      try {
        return await wait();
      } finally {
        await takeBack?.();
      }
    },
    note: async (message: string | null) => {
      // What waits to be written first, so the note lands on the status the database holds.
      if ((await flush(ctx)) === 'stale') return;
      if (await noteRevision(ctx, revision, message, leaseFence(ctx), ctx.settings.workerId)) revision.status_message = message;
    },
  };
  const work = body(step);
  try {
    const value = await Promise.race([work, aborted<T>(controller.signal)]).finally(() => takeBack?.());
    endStepRun(ctx, revision, { id: runId, outcome: 'succeeded', at: nowIso() });
    observeStep(spec.name, 'succeeded', elapsedSeconds());
    return { ok: true, value };
  } catch (error) {
    const reason = stopReasonOf(controller.signal);
    // An aborted driver cleans up after itself (removes a half-started container): let it
    // finish, within reason, before the revision moves on or the process exits.
    if (reason) await Promise.race([work.catch(() => {}), new Promise((resolve) => setTimeout(resolve, CLEANUP_GRACE_MS))]);
    endStepRun(ctx, revision, { id: runId, outcome: reason ?? 'failed', at: nowIso() });
    observeStep(spec.name, reason ?? 'failed', elapsedSeconds());
    if (reason === 'timeout') {
      const seconds = Math.round(spec.timeoutMs / 1000);
      const message = `${title(spec.name)} timed out after ${seconds} s. Check the ${spec.logType} logs for where it stalled; raise the limit with ${spec.timeoutSetting} if it needs longer.`;
      await writeLog(ctx, revision, spec.logType, 'ERROR', message);
      // Berth stopped the revision, not a person: its own audit row, written with the move.
      const interrupted = {
        action: 'revision.interrupt',
        target: { type: 'revision', id: revision.id, name: null },
        reason: `the ${spec.name} step ran past its timeout of ${seconds} s (${spec.timeoutSetting})`,
      };
      await moveRevision(ctx, revision, spec.failedStatus, message, undefined, (trx) =>
        insertBerthAuditRow(trx, { deploymentId: revision.deployment_id }, interrupted),
      );
      return { ok: false, next: 'again', started: true };
    }
    if (reason) {
      await writeLog(ctx, revision, spec.logType, 'INFO', stopMessage(reason));
      await flush(ctx);
      return { ok: false, next: reason === 'interrupted' ? 'again' : 'leave', started: true };
    }
    if (error instanceof DriverError) {
      const message = `${title(spec.name)} failed: ${error.message}`;
      await writeLog(ctx, revision, spec.logType, 'ERROR', message);
      await moveRevision(ctx, revision, spec.failedStatus, message);
      return { ok: false, next: 'again', started: true };
    }
    ctx.logger.error({ err: error, revisionId: revision.id, step: spec.name }, 'engine step failed unexpectedly');
    const message = `${title(spec.name)} failed: an internal error occurred in Berth during the ${spec.name} step; the server log has the details (revision ${revision.id}).`;
    await writeLog(ctx, revision, spec.logType, 'ERROR', message);
    await moveRevision(ctx, revision, spec.failedStatus, message);
    return { ok: false, next: 'again', started: true };
  } finally {
    clearTimeout(timer);
    ctx.work.signal.removeEventListener('abort', forward);
    ctx.step = undefined;
  }
}

function aborted<T>(signal: AbortSignal): Promise<T> {
  return new Promise<T>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export function quietStep(ctx: WorkContext): StepContext {
  return { signal: AbortSignal.timeout(ctx.settings.deployTimeoutMs), log: async () => {} };
}

function title(step: StepSpec['name']): string {
  return { build: 'Build', deploy: 'Deploy', database: 'Database setup' }[step];
}

function stopMessage(reason: string): string {
  switch (reason) {
    case 'interrupted':
      return 'Stopped: the revision was interrupted.';
    case 'deleting':
      return 'Stopped: the deployment is being deleted.';
    default:
      return 'Paused: this Berth process stopped working on the revision; another process will resume it.';
  }
}
