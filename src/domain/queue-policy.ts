import { isWaiting, type RevisionStatus } from './revision-status.js';

/**
 * Statuses in which a revision of a deployment placed on a listener is the listener's to
 * move on: the engine handed it over (AWAITING_DEPLOY) and the listener deploys it
 * (DEPLOYING). The engine must not look at such a deployment again until something
 * changes, or it would claim it over and over with nothing to do.
 */
export const LISTENER_OWNED_STATUSES = ['AWAITING_DEPLOY', 'DEPLOYING'] as const satisfies readonly RevisionStatus[];

export function isListenerOwned(status: string, placedOnListener: boolean): boolean {
  return placedOnListener && (LISTENER_OWNED_STATUSES as readonly string[]).includes(status);
}

export interface UnfinishedRevision {
  id: string;
  seq: number;
  status: RevisionStatus;
}

/** What the engine does with a deployment's unfinished revisions, decided before it does anything. */
export interface QueuePlan<R extends UnfinishedRevision> {
  /** Replaced by a newer revision before they started: they end SKIPPED. */
  skip: R[];
  /** The newest revision, waiting behind one in flight: it shows QUEUED meanwhile. */
  queue: R | null;
  /** The revision that is in flight behind which `queue` waits (for its message). */
  behind: R | null;
  /** The revision the engine works on now; null when there is nothing for the engine to do. */
  run: R | null;
}

/**
 * Latest wins: of the revisions that have not started, only the newest runs, and one
 * revision per deployment is in flight at a time. On a listener, a revision handed over
 * but not yet taken up (AWAITING_DEPLOY) has not started either, so a newer one replaces
 * it; one the listener is deploying finishes first, and meanwhile the engine has nothing
 * to do for the deployment (the listener's report wakes it).
 *
 * `unfinished` is oldest first.
 */
export function planQueue<R extends UnfinishedRevision>(unfinished: readonly R[], placedOnListener: boolean): QueuePlan<R> {
  const waiting = unfinished.filter((r) => isWaiting(r.status));
  const newest = waiting.at(-1) ?? null;
  const skip = waiting.slice(0, -1);
  let inFlight = unfinished.find((r) => !isWaiting(r.status)) ?? null;

  if (inFlight && newest && placedOnListener && inFlight.status === 'AWAITING_DEPLOY') {
    skip.push(inFlight);
    inFlight = null;
  }
  if (!inFlight) return { skip, queue: null, behind: null, run: newest };

  const queue = newest && newest.status === 'CREATING' ? newest : null;
  const run = isListenerOwned(inFlight.status, placedOnListener) ? null : inFlight;
  return { skip, queue, behind: queue ? inFlight : null, run };
}
