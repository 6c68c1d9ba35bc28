import { IN_PROGRESS_STATUSES, isWaiting } from '../domain/revision-status.js';
import { nowIso } from '../store/database.js';
import { findDeploymentById } from '../store/repositories/deployments.js';
import { renewLease, releaseLease } from '../store/repositories/leases.js';
import { findRevisionById, unfinishedRevisions } from '../store/repositories/revisions.js';
import { StopSignal, stopReasonOf, type WorkContext } from './context.js';
import { moveRevision } from './effects.js';
import { advance } from './steps.js';

const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/**
 * Everything the engine does for one leased deployment: tear it down if it is being
 * deleted, else apply the queue policy and carry revisions through their steps until
 * none is left or the work must stop. Holds the lease with a heartbeat throughout.
 */
export async function workOnDeployment(ctx: WorkContext): Promise<void> {
  const stopWatching = watch(ctx);
  try {
    while (!ctx.work.signal.aborted) {
      const deployment = await findDeploymentById(ctx.db, ctx.deploymentId);
      if (!deployment) return;
      if (deployment.status === 'AWAITING_DELETE') return await teardown(ctx);

      const unfinished = await unfinishedRevisions(ctx.db, ctx.deploymentId, IN_PROGRESS);
      if (unfinished.length === 0) return await settle(ctx);
      const target = await applyQueuePolicy(ctx, unfinished);
      if (!target) continue;

      let revision = target;
      for (;;) {
        const next = await advance(ctx, deployment, revision);
        if (next === 'leave') return;
        if (next === 'next' || ctx.work.signal.aborted) break;
        const fresh = await findRevisionById(ctx.db, revision.id);
        if (!fresh || !IN_PROGRESS_STATUSES.has(fresh.status as never)) break;
        revision = fresh;
      }
    }
  } finally {
    stopWatching();
    if (stopReasonOf(ctx.work.signal) !== 'lease-lost') await releaseLease(ctx.db, ctx.deploymentId, ctx.settings.workerId).catch(() => {});
  }
}

/**
 * Latest wins: of the revisions that have not started, only the newest runs; older ones
 * are skipped. One revision is in flight at a time: a started one finishes first.
 */
async function applyQueuePolicy(ctx: WorkContext, unfinished: Awaited<ReturnType<typeof unfinishedRevisions>>) {
  const started = unfinished.filter((r) => !isWaiting(r.status));
  const waiting = unfinished.filter((r) => isWaiting(r.status));
  const newest = waiting.at(-1);
  for (const older of waiting.slice(0, -1)) {
    await moveRevision(ctx, older, 'SKIPPED', `Skipped: revision ${newest?.seq} is newer and replaces it.`);
  }
  const inFlight = started[0];
  if (inFlight && newest?.status === 'CREATING') {
    await moveRevision(ctx, newest, 'QUEUED', `Waiting for revision ${inFlight.seq} to finish.`);
  }
  return inFlight ?? newest;
}

/** Nothing left to run: a deployment with nothing serving is UNUSED until a revision deploys. */
async function settle(ctx: WorkContext): Promise<void> {
  await ctx.db
    .updateTable('deployments')
    .set({ status: 'UNUSED', updated_at: nowIso() })
    .where('id', '=', ctx.deploymentId)
    .where('active_revision_id', 'is', null)
    .where('status', 'in', ['AWAITING_DATABASE', 'READY'])
    .where('lease_owner', '=', ctx.settings.workerId)
    .execute();
}

/** Removes what the runtime runs for the deployment, then the deployment itself. */
async function teardown(ctx: WorkContext): Promise<void> {
  const step = { signal: AbortSignal.any([ctx.work.signal, AbortSignal.timeout(ctx.settings.deployTimeoutMs)]), log: async () => {} };
  try {
    if ((await ctx.runtime.unavailableReason()) === null) await ctx.runtime.teardown(ctx.deploymentId, step);
  } catch (error) {
    // Keep the lease until it expires: a natural back-off before the next attempt.
    ctx.logger.warn({ err: error, deploymentId: ctx.deploymentId }, 'teardown failed; will retry');
    ctx.work.abort(new StopSignal('lease-lost'));
    return;
  }
  await ctx.db.deleteFrom('deployments').where('id', '=', ctx.deploymentId).where('lease_owner', '=', ctx.settings.workerId).execute();
  ctx.bus.publish({ topic: 'deployment', deploymentId: ctx.deploymentId });
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
        else await applyQueuePolicy(ctx, await unfinishedRevisions(ctx.db, ctx.deploymentId, IN_PROGRESS));
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
  const heartbeat = setInterval(() => {
    const expires = new Date(Date.now() + ctx.settings.leaseMs).toISOString();
    renewLease(ctx.db, ctx.deploymentId, ctx.settings.workerId, expires)
      .then((held) => {
        if (!held) ctx.work.abort(new StopSignal('lease-lost'));
        else return check();
      })
      .catch((error) => ctx.logger.warn({ err: error }, 'lease renewal failed'));
  }, Math.max(50, Math.floor(ctx.settings.leaseMs / 3)));
  return () => {
    unsubscribe();
    clearInterval(heartbeat);
  };
}

