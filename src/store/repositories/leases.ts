import { IN_PROGRESS_STATUSES } from '../../domain/revision-status.js';
import { LISTENER_OWNED_STATUSES } from '../../domain/queue-policy.js';
import { sql } from 'kysely';
import type { Executor } from '../database.js';
import { escapeLike } from '../like.js';
import { preparedQuery } from '../prepared.js';

const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/**
 * Unleased deployments with engine work, to be leased with `takeLease`: a revision in
 * progress that the engine can move on (by its oldest such revision), or a pending delete
 * (first). The lease is the unit of exclusion: one worker per deployment at a time, which
 * also keeps one revision per deployment in flight. The compare-and-set on the lease
 * columns makes a double claim impossible on either database; losing the race just means
 * trying the next candidate.
 *
 * What the engine "can move on" mirrors `planQueue` (domain/queue-policy.ts): on a
 * listener, a revision handed over or being deployed is the listener's, and a revision
 * queued behind one the listener is deploying waits for the listener's report. A
 * deployment claimed with nothing to do would be claimed again at once, forever.
 *
 * `skip` names deployments this worker found idle and parked (see Engine); they are left
 * out so that they cannot crowd others out of the candidates.
 */
export async function claimCandidates(db: Executor, now: string, skip: readonly string[] = [], limit = 8): Promise<string[]> {
  // Two narrow queries rather than one EXISTS over every deployment: both walk an index
  // (revisions by status, deployments by status), so the cost follows the amount of
  // pending work, not the number of deployments.
  let withRevisions = db
    .selectFrom('revisions as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select('d.id')
    .where('r.status', 'in', IN_PROGRESS)
    .where((eb) =>
      eb.or([
        eb('d.listener_id', 'is', null),
        eb.and([
          eb('r.status', 'not in', LISTENER_OWNED_STATUSES),
          eb.not(
            eb.and([
              eb('r.status', '=', 'QUEUED'),
              eb.exists(
                eb.selectFrom('revisions as busy').select('busy.id').whereRef('busy.deployment_id', '=', 'd.id').where('busy.status', '=', 'DEPLOYING'),
              ),
            ]),
          ),
        ]),
      ]),
    )
    // A placed deployment being deleted waits for its listener's report, revisions and all.
    .where((eb) => eb.or([eb('d.listener_id', 'is', null), eb('d.status', '!=', 'AWAITING_DELETE')]))
    .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]));
  if (skip.length > 0) withRevisions = withRevisions.where('d.id', 'not in', skip);
  const pending = await withRevisions.orderBy('r.created_at').limit(limit).execute();
  let deletingQuery = db
    .selectFrom('deployments as d')
    .select('d.id')
    .where('d.status', '=', 'AWAITING_DELETE')
    // On a listener, the listener removes what runs and reports it (which releases the deployment).
    .where('d.listener_id', 'is', null)
    .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]));
  if (skip.length > 0) deletingQuery = deletingQuery.where('d.id', 'not in', skip);
  const deleting = await deletingQuery.limit(limit).execute();
  return [...new Set([...deleting, ...pending].map((c) => c.id))];
}

const leaseOne = preparedQuery((db: Executor, id: string, worker: string, now: string, expiresAt: string) =>
  db
    .updateTable('deployments')
    .set({ lease_owner: worker, lease_expires_at: expiresAt })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
    .returning('id'),
);

/** The compare-and-set that leases one deployment; false when another worker holds it. */
export async function takeLease(db: Executor, id: string, worker: string, now: string, expiresAt: string): Promise<boolean> {
  return (await leaseOne(db, id, worker, now, expiresAt)).length > 0;
}

/** Extends a lease we hold; false means it was lost (expired and taken, or deleted). */
export async function renewLease(db: Executor, deploymentId: string, worker: string, expiresAt: string): Promise<boolean> {
  const result = await db
    .updateTable('deployments')
    .set({ lease_expires_at: expiresAt })
    .where('id', '=', deploymentId)
    .where('lease_owner', '=', worker)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function releaseLease(db: Executor, deploymentId: string, worker: string): Promise<void> {
  await db
    .updateTable('deployments')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('id', '=', deploymentId)
    .where('lease_owner', '=', worker)
    .execute();
}

/** Lease holders whose worker id names this host, e.g. `host/1234/ab12cd`. */
export async function leaseHoldersOn(db: Executor, host: string): Promise<string[]> {
  const rows = await db
    .selectFrom('deployments')
    .select('lease_owner')
    .distinct()
    // Explicit ESCAPE: SQLite has no default escape character for LIKE.
    .where(sql<boolean>`lease_owner like ${`${escapeLike(host)}/%`} escape '\\'`)
    .execute();
  return rows.flatMap((row) => (row.lease_owner ? [row.lease_owner] : []));
}

/** Releases every lease a worker holds (one that is gone for good). */
export async function releaseLeasesOf(db: Executor, worker: string): Promise<void> {
  await db.updateTable('deployments').set({ lease_owner: null, lease_expires_at: null }).where('lease_owner', '=', worker).execute();
}
