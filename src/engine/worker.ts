import { planQueue, type QueuePlan } from '../domain/queue-policy.js';
import { IN_PROGRESS_STATUSES } from '../domain/revision-status.js';
import { settleUnused } from '../lifecycle/outcomes.js';
import { deleteDeploymentHeldBy, findDeploymentById } from '../store/repositories/deployments.js';
import { readDeploymentWork, releaseLeaseIfSettled } from '../store/repositories/engine-work.js';
import type { Executor } from '../store/database.js';
import { renewLease, releaseLease } from '../store/repositories/leases.js';
import { findRevisionById, type RevisionRecord, revisionsInStatus } from '../store/repositories/revisions.js';
import { StopSignal, stopReasonOf, type WorkAssignment, type WorkContext } from './context.js';
import { deprovisionDatabases } from './databases.js';
import { DelayedWrites, flush, leaseFence, moveRevision } from './effects.js';
import { advance } from './steps.js';

const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/** `idle`: the deployment was claimed with nothing for the engine to do (see Engine's parking). */
export type WorkOutcome = 'done' | 'idle';

/**
 * Everything the engine does for one leased deployment: tear it down if it is being
 * deleted, else apply the queue policy and carry revisions through their steps until
 * none is left for the engine or the work must stop. Holds the lease with a heartbeat
 * throughout.
 */
export async function workOnDeployment(assignment: WorkAssignment): Promise<WorkOutcome> {
  const ctx: WorkContext = { ...assignment, lastRead: {}, writes: new DelayedWrites() };
  const stopWatching = watch(ctx);
  let progressed = false;
  let released = false;
  try {
    while (!ctx.work.signal.aborted) {
      const work = await readDeploymentWork(ctx.db, ctx.deploymentId);
      if (!work) return 'done';
      const { deployment, unfinished } = work;
      ctx.lastRead = { listenerId: deployment.listener_id, secretEntries: work.secretEntries, hasDatabases: work.hasDatabases };
      if (deployment.status === 'AWAITING_DELETE') {
        // Placed on a listener: its deletion report releases it, and then the engine finishes.
        if (deployment.listener_id !== null) return progressed ? 'done' : 'idle';
        await teardown(ctx);
        return 'done';
      }

      if (unfinished.length === 0) {
        await settleUnused(ctx, ctx.deploymentId, { fence: leaseFence(ctx), origin: ctx.settings.workerId, inFlightChecked: true });
        return 'done';
      }
      const plan = planQueue(unfinished, deployment.listener_id !== null);
      if (await applyQueuePlan(ctx, plan)) progressed = true;
      if (!plan.run) return progressed ? 'done' : 'idle';

      const revision: RevisionRecord = plan.run;
      for (;;) {
        const before = revision.status;
        const next = await advance(ctx, deployment, revision);
        progressed = true;
        // Carry on from what this process knows only while its own moves went through.
        const knownWell = !ctx.writes.stale && !ctx.work.signal.aborted && revision.status !== before;
        if (next === 'again' && knownWell && IN_PROGRESS_STATUSES.has(revision.status as never)) continue;
        // Done with the revision: when nothing else is left, one statement in the same
        // transaction as its last status change ends the work.
        let settled = false;
        const releaseIfSettled =
          next === 'next'
            ? async (db: Executor) => {
                settled = await releaseLeaseIfSettled(db, ctx.deploymentId, ctx.settings.workerId);
              }
            : undefined;
        await flush(ctx, releaseIfSettled);
        ctx.writes.trustAgain();
        // Released: whatever else was learned, the lease is no longer ours to work under.
        if (settled) {
          released = true;
          return 'done';
        }
        if (next === 'leave') return 'done';
        // Stale (read again) or more to do: the outer loop starts from a fresh read.
        break;
      }
      if (ctx.work.signal.aborted) break;
    }
    return 'done';
  } finally {
    stopWatching();
    await flush(ctx).catch((error: unknown) => ctx.logger.warn({ err: error }, 'could not write what the engine decided'));
    if (!released && stopReasonOf(ctx.work.signal) !== 'lease-lost') await releaseLease(ctx.db, ctx.deploymentId, ctx.settings.workerId).catch(() => {});
  }
}

/** Skips and queues as planned; true when it moved any revision. */
async function applyQueuePlan(ctx: WorkContext, plan: QueuePlan<RevisionRecord>): Promise<boolean> {
  let moved = false;
  const replacement = plan.run ?? plan.queue;
  for (const older of plan.skip) {
    if (await moveRevision(ctx, older, 'SKIPPED', `Skipped: revision ${replacement?.seq} is newer and replaces it.`)) moved = true;
  }
  if (plan.queue && plan.behind) {
    if (await moveRevision(ctx, plan.queue, 'QUEUED', `Waiting for revision ${plan.behind.seq} to finish.`)) moved = true;
  }
  return moved;
}

/** Removes what the runtime runs for the deployment, then the deployment itself. */
async function teardown(ctx: WorkContext): Promise<void> {
  const step = { signal: AbortSignal.any([ctx.work.signal, AbortSignal.timeout(ctx.settings.deployTimeoutMs)]), log: async () => {} };
  try {
    if ((await ctx.runtime.unavailableReason()) === null) await ctx.runtime.teardown(ctx.deploymentId, step);
    await deprovisionDatabases(ctx, ctx.deploymentId);
    await ctx.uploads.discardDeployment(ctx.deploymentId);
  } catch (error) {
    // Keep the lease until it expires: a natural back-off before the next attempt.
    ctx.logger.warn({ err: error, deploymentId: ctx.deploymentId }, 'teardown failed; will retry');
    ctx.work.abort(new StopSignal('lease-lost'));
    return;
  }
  if (await deleteDeploymentHeldBy(ctx.db, ctx.deploymentId, ctx.settings.workerId)) {
    ctx.bus.publish({ topic: 'deployment', deploymentId: ctx.deploymentId });
  }
}

/**
 * Keeps the lease alive, queues newly arrived revisions, and stops the running step
 * promptly when its revision is interrupted or the deployment is being deleted (heard on the bus, or seen at the
 * next heartbeat when another process made the change and no bus reached us).
 */
function watch(ctx: WorkContext): () => void {
  let checking = false;
  const check = async () => {
    if (checking || ctx.work.signal.aborted) return;
    checking = true;
    try {
      const step = ctx.step;
      if (step) {
        const revision = await findRevisionById(ctx.db, step.revisionId);
        if (revision?.status === 'INTERRUPTED') step.controller.abort(new StopSignal('interrupted'));
        // Revisions that arrive while one is in flight are queued or skipped right away,
        // so their status tells the truth without waiting for the running step.
        else {
          const deployment = await findDeploymentById(ctx.db, ctx.deploymentId);
          const unfinished = await revisionsInStatus(ctx.db, ctx.deploymentId, IN_PROGRESS);
          await applyQueuePlan(ctx, planQueue(unfinished, Boolean(deployment?.listener_id)));
        }
      }
      const deployment = await findDeploymentById(ctx.db, ctx.deploymentId);
      if (!deployment || deployment.status === 'AWAITING_DELETE') ctx.work.abort(new StopSignal('deleting'));
    } finally {
      checking = false;
    }
  };
  const unsubscribe = ctx.bus.subscribe((message) => {
    // Our own status changes and log lines are announced too; only others' news can
    // interrupt, delete or queue behind the running step.
    if (message.deploymentId === ctx.deploymentId && message.origin !== ctx.settings.workerId) void check().catch(() => {});
  });
  const heartbeat = setInterval(
    () => {
      const expires = new Date(Date.now() + ctx.settings.leaseMs).toISOString();
      renewLease(ctx.db, ctx.deploymentId, ctx.settings.workerId, expires)
        .then((held) => {
          if (!held) ctx.work.abort(new StopSignal('lease-lost'));
          else return check();
        })
        .catch((error) => ctx.logger.warn({ err: error }, 'lease renewal failed'));
    },
    Math.max(50, Math.floor(ctx.settings.leaseMs / 3)),
  );
  return () => {
    unsubscribe();
    clearInterval(heartbeat);
  };
}
