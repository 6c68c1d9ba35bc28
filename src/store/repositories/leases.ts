import { IN_PROGRESS_STATUSES } from '../../domain/revision-status.js';
import type { Executor } from '../database.js';
import type { DeploymentRow } from './deployments.js';

const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/**
 * Leases a deployment that has engine work: a revision in progress that is not waiting
 * on a listener, or a pending delete. The lease is the unit of exclusion: one worker
 * per deployment at a time, which also keeps one revision per deployment in flight.
 * The compare-and-set on the lease columns makes a double claim impossible on either
 * database; losing the race just means trying the next candidate.
 */
export async function claimDeployment(db: Executor, worker: string, now: string, expiresAt: string): Promise<DeploymentRow | undefined> {
  // Two narrow queries rather than one EXISTS over every deployment: both walk an index
  // (revisions by status, deployments by status), so the cost follows the amount of
  // pending work, not the number of deployments.
  const withRevisions = await db
    .selectFrom('revisions as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select('d.id')
    .where('r.status', 'in', IN_PROGRESS)
    // A revision handed to a listener waits on the listener, not on the engine.
    .where((eb) => eb.not(eb.and([eb('r.status', '=', 'AWAITING_DEPLOY'), eb('d.listener_id', 'is not', null)])))
    .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]))
    .orderBy('r.created_at')
    .limit(8)
    .execute();
  const deleting = await db
    .selectFrom('deployments as d')
    .select('d.id')
    .where('d.status', '=', 'AWAITING_DELETE')
    .where((eb) => eb.or([eb('d.lease_expires_at', 'is', null), eb('d.lease_expires_at', '<', now)]))
    .limit(8)
    .execute();
  const candidates = [...new Set([...deleting, ...withRevisions].map((c) => c.id))].map((id) => ({ id }));

  for (const { id } of candidates) {
    const claimed = await db
      .updateTable('deployments')
      .set({ lease_owner: worker, lease_expires_at: expiresAt })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
      .returningAll()
      .executeTakeFirst();
    if (claimed) return claimed;
  }
  return undefined;
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
