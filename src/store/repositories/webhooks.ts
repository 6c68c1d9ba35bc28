import type { Db, Executor } from '../database.js';
import type { Database } from '../schema.js';

type SubscriptionRow = Database['webhook_subscriptions'];
export type SubscriptionRecord = Omit<SubscriptionRow, 'events'> & { events: string[] };
export type DeliveryRow = Database['webhook_deliveries'];
export type AttemptRow = Database['webhook_attempts'];
export type WebhookEventRow = Database['webhook_events'];

const decode = (row: SubscriptionRow): SubscriptionRecord => ({ ...row, events: JSON.parse(row.events) as string[] });

export async function insertSubscription(db: Executor, record: SubscriptionRecord): Promise<void> {
  await db
    .insertInto('webhook_subscriptions')
    .values({ ...record, events: JSON.stringify(record.events) })
    .execute();
}

export async function findSubscription(db: Executor, workspaceId: string, id: string): Promise<SubscriptionRecord | undefined> {
  const row = await db.selectFrom('webhook_subscriptions').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return row && decode(row);
}

export async function findSubscriptionById(db: Executor, id: string): Promise<SubscriptionRecord | undefined> {
  const row = await db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decode(row);
}

export async function listSubscriptions(db: Executor, workspaceId: string, page: { limit: number; offset: number }): Promise<SubscriptionRecord[]> {
  const rows = await db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(decode);
}

/** The workspace's enabled subscriptions, for an event's deliveries. */
export async function enabledSubscriptions(db: Executor, workspaceId: string): Promise<SubscriptionRecord[]> {
  const rows = await db.selectFrom('webhook_subscriptions').selectAll().where('workspace_id', '=', workspaceId).where('disabled_at', 'is', null).execute();
  return rows.map(decode);
}

export async function deleteSubscription(db: Executor, workspaceId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhook_subscriptions').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** A failure: `failing_since` starts at the first failure after a success and stays. */
export async function markFailing(db: Executor, id: string, at: string): Promise<void> {
  await db.updateTable('webhook_subscriptions').set({ failing_since: at }).where('id', '=', id).where('failing_since', 'is', null).execute();
}

export async function clearFailing(db: Executor, id: string): Promise<void> {
  await db.updateTable('webhook_subscriptions').set({ failing_since: null }).where('id', '=', id).where('failing_since', 'is not', null).execute();
}

/** Disables the subscription (once) and gives up its pending deliveries; answers whether this call disabled it. */
export async function disableSubscription(db: Executor, id: string, at: string, reason: string): Promise<boolean> {
  const result = await db
    .updateTable('webhook_subscriptions')
    .set({ disabled_at: at, disabled_reason: reason })
    .where('id', '=', id)
    .where('disabled_at', 'is', null)
    .executeTakeFirst();
  await db
    .updateTable('webhook_deliveries')
    .set({ state: 'failed', next_attempt_at: null, leased_until: null, last_error: 'subscription disabled' })
    .where('subscription_id', '=', id)
    .where('state', '=', 'pending')
    .execute();
  return result.numUpdatedRows > 0n;
}

export interface NewWebhookEvent {
  id: string;
  type: string;
  payload: unknown;
  occurredAt: string;
}

/**
 * The outbox row of an event in a workspace, written only when the workspace has an
 * enabled subscription (one statement either way): a change in a workspace nobody listens
 * to costs no row. Answers whether a row was written.
 */
export async function insertWebhookEvent(db: Executor, workspaceId: string, event: NewWebhookEvent): Promise<boolean> {
  const result = await db
    .insertInto('webhook_events')
    .columns(['id', 'workspace_id', 'type', 'payload', 'occurred_at'])
    .expression((eb) =>
      eb
        .selectFrom('webhook_subscriptions')
        .select([
          eb.val(event.id).as('id'),
          'workspace_id',
          eb.val(event.type).as('type'),
          eb.val(JSON.stringify(event.payload)).as('payload'),
          eb.val(event.occurredAt).as('occurred_at'),
        ])
        .where('workspace_id', '=', workspaceId)
        .where('disabled_at', 'is', null)
        .limit(1),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function eventsToFanOut(db: Executor, limit: number): Promise<WebhookEventRow[]> {
  return db.selectFrom('webhook_events').selectAll().orderBy('occurred_at').limit(limit).execute();
}

/**
 * Takes the event off the outbox for this deliverer, in the transaction that makes its
 * deliveries: false when another deliverer took it first.
 */
export async function takeEvent(db: Executor, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhook_events').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function insertDeliveries(db: Executor, rows: DeliveryRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('webhook_deliveries').values(rows).execute();
}

/** Pending deliveries whose time has come and that no deliverer holds. */
export async function dueDeliveries(db: Executor, now: string, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute();
}

export async function insertAttempt(db: Executor, attempt: AttemptRow): Promise<void> {
  await db.insertInto('webhook_attempts').values(attempt).execute();
}

export async function updateDelivery(
  db: Executor,
  id: string,
  changes: Partial<Pick<DeliveryRow, 'state' | 'attempts' | 'next_attempt_at' | 'leased_until' | 'last_status_code' | 'last_error'>>,
): Promise<void> {
  await db.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
}

export async function listDeliveries(db: Executor, subscriptionId: string, page: { limit: number; offset: number }): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function findDelivery(db: Executor, subscriptionId: string, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('subscription_id', '=', subscriptionId).where('id', '=', id).executeTakeFirst();
}

/**
 * Retention: removes the deliveries made before `before` that are done with (delivered or
 * failed; a pending one is still being tried), their attempts first, in one transaction.
 * Answers how many deliveries went.
 */
export async function deleteWebhookDeliveriesBefore(db: Db, before: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const finished = trx.selectFrom('webhook_deliveries').select('id').where('created_at', '<', before).where('state', '!=', 'pending');
    await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', finished).execute();
    const result = await trx.deleteFrom('webhook_deliveries').where('created_at', '<', before).where('state', '!=', 'pending').executeTakeFirst();
    return Number(result.numDeletedRows);
  });
}

export async function attemptsOf(db: Executor, deliveryIds: readonly string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('delivery_id').orderBy('number').execute();
}

/** Listeners silent since before `cutoff` whose going silent was not announced yet. */
export async function silentListeners(db: Executor, cutoff: string) {
  return db
    .selectFrom('listeners')
    .select(['id', 'workspace_id', 'compute_id', 'last_seen_at'])
    .where('last_seen_at', '<', cutoff)
    .where((eb) => eb.or([eb('offline_announced_at', 'is', null), eb('offline_announced_at', '<', eb.ref('last_seen_at'))]))
    .execute();
}

/** Marks the silence announced, unless the agent was heard from meanwhile or another process announced it first. */
export async function markOfflineAnnounced(db: Executor, id: string, lastSeenAt: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('listeners')
    .set({ offline_announced_at: at })
    .where('id', '=', id)
    .where('last_seen_at', '=', lastSeenAt)
    .where((eb) => eb.or([eb('offline_announced_at', 'is', null), eb('offline_announced_at', '<', eb.ref('last_seen_at'))]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
