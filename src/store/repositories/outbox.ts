import type { Executor } from '../database.js';

/**
 * The outboxes worked off after commit (docs/webhooks.md): webhook deliveries and GitHub
 * notices. Their rows share what a sender needs to take turns: `state` (`pending` until done
 * with), `next_attempt_at` and `leased_until`.
 */
export type OutboxTable = 'webhook_deliveries' | 'github_notices';

/**
 * The earliest time a pending row can be sent, for the sender's next wake-up: its attempt's
 * time, or the end of the lease another sender holds on it (a wake-up before then would find
 * nothing to send, again and again).
 */
export async function nextOutboxDueAt(db: Executor, table: OutboxTable): Promise<string | undefined> {
  const row = await db
    .selectFrom(table)
    .select((eb) =>
      eb.fn.min(eb.case().when('leased_until', '>', eb.ref('next_attempt_at')).then(eb.ref('leased_until')).else(eb.ref('next_attempt_at')).end()).as('next'),
    )
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return (row?.next as string | null | undefined) ?? undefined;
}

/** Holds a pending row while it is sent, so two senders never send it at once; false when another holds it or it is done with. */
export async function leaseOutboxRow(db: Executor, table: OutboxTable, id: string, now: string, until: string): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set({ leased_until: until })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', now)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
