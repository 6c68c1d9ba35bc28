import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { DELIVERY_TIMEOUT_MS, deliveryBody, FIRST_RETRY_DELAY_MS, RESPONSE_EXCERPT_BYTES, RETRY_WINDOW_MS, retryDelayMs, wants } from '../domain/webhooks.js';
import type { EventBus } from '../events/bus.js';
import { postOnce } from '../outbound/sender.js';
import { announceOfflineListeners } from './listener-offline.js';
import { startOutboxLoop } from './outbox-loop.js';
import { signatureHeader } from '../outbound/signature.js';
import type { Encryptor } from '../security/encryption.js';
import { webhookSecretContext } from '../security/webhook-secrets.js';
import type { Db } from '../store/database.js';
import { insertBerthAuditRow } from '../store/repositories/audit.js';
import { leaseOutboxRow, nextOutboxDueAt } from '../store/repositories/outbox.js';
import * as repo from '../store/repositories/webhooks.js';

export interface DelivererDeps {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  logger: Logger;
}

export interface DelivererSettings {
  /** BERTH_OUTBOUND_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** The first retry's wait (doubling after, with jitter). */
  firstRetryDelayMs: number;
  /** How long a delivery is retried, and how long a subscription may fail before it is disabled. */
  retryWindowMs: number;
  timeoutMs: number;
  /** How long a deliverer holds a delivery it is sending: longer than the timeout. */
  leaseMs: number;
  /** The longest sleep between passes when nothing wakes the deliverer. */
  sweepMs: number;
  /** Deliveries sent at once by one deliverer. */
  concurrency: number;
  /** The clock (tests move it). */
  now: () => number;
  random: () => number;
}

export const DEFAULT_DELIVERER_SETTINGS: DelivererSettings = {
  allowPrivate: false,
  firstRetryDelayMs: FIRST_RETRY_DELAY_MS,
  retryWindowMs: RETRY_WINDOW_MS,
  timeoutMs: DELIVERY_TIMEOUT_MS,
  leaseMs: 6 * DELIVERY_TIMEOUT_MS,
  sweepMs: 30_000,
  concurrency: 4,
  now: Date.now,
  random: Math.random,
};

const iso = (ms: number) => new Date(ms).toISOString();
/** PostgreSQL text cannot hold NUL; an answer is shown, never parsed, so it is replaced. */
const printable = (text: string) => text.replaceAll('\u0000', '\uFFFD');

/**
 * Sends outbound webhooks (docs/webhooks.md), beside the engine: wakes on the bus's
 * `webhooks` topic, at the next retry's time, and every `sweepMs` at the latest. Everything
 * it knows is in rows (the outbox, deliveries with their next attempt and lease), so a
 * restart, or several deliverers on one PostgreSQL, lose and double nothing.
 */
export function startWebhookDeliverer(deps: DelivererDeps, overrides: Partial<DelivererSettings> = {}): { stop(): Promise<void> } {
  const settings = { ...DEFAULT_DELIVERER_SETTINGS, ...overrides };
  return startOutboxLoop({
    pass: async () => {
      await deliverPass(deps, settings);
      return nextOutboxDueAt(deps.db, 'webhook_deliveries');
    },
    bus: deps.bus,
    logger: deps.logger,
    what: 'delivering webhooks',
    sweepMs: settings.sweepMs,
    now: settings.now,
  });
}

/** One pass: announce listeners that went silent, make the deliveries of new outbox events, then send what is due. */
export async function deliverPass(deps: DelivererDeps, settings: DelivererSettings): Promise<void> {
  await announceOfflineListeners(deps.db, settings.now());
  await fanOut(deps, settings);
  for (;;) {
    const due = await repo.dueDeliveries(deps.db, iso(settings.now()), settings.concurrency);
    if (due.length === 0) return;
    // One delivery that cannot be sent (its secret unreadable, say) must not stop the others: it stays leased, out of the way, for leaseMs.
    await Promise.all(
      due.map((delivery) =>
        attempt(deps, settings, delivery).catch((error: unknown) =>
          deps.logger.warn({ err: error, delivery: delivery.id }, 'a webhook delivery could not be attempted'),
        ),
      ),
    );
  }
}

/** Each new event becomes one delivery per enabled subscription that wants it (and existed when it happened). */
async function fanOut(deps: DelivererDeps, settings: DelivererSettings): Promise<void> {
  for (;;) {
    const events = await repo.eventsToFanOut(deps.db, 100);
    if (events.length === 0) return;
    for (const event of events) {
      await deps.db.transaction().execute(async (trx) => {
        if (!(await repo.takeEvent(trx, event.id))) return;
        const subscriptions = (await repo.enabledSubscriptions(trx, event.workspace_id)).filter(
          (subscription) => wants(subscription.events, event.type) && subscription.created_at <= event.occurred_at,
        );
        const now = iso(settings.now());
        const payload = JSON.parse(event.payload) as unknown;
        await repo.insertDeliveries(
          trx,
          subscriptions.map((subscription) => {
            const id = randomUUID();
            return {
              id,
              subscription_id: subscription.id,
              event_id: event.id,
              event_type: event.type,
              body: deliveryBody({ id, eventId: event.id, type: event.type, occurredAt: event.occurred_at, payload }),
              state: 'pending',
              attempts: 0,
              created_at: now,
              next_attempt_at: now,
              leased_until: null,
              last_status_code: null,
              last_error: null,
              redelivery_of: null,
            };
          }),
        );
      });
    }
  }
}

async function attempt(deps: DelivererDeps, settings: DelivererSettings, delivery: repo.DeliveryRow): Promise<void> {
  const { db } = deps;
  const startedAt = settings.now();
  if (!(await leaseOutboxRow(db, 'webhook_deliveries', delivery.id, iso(startedAt), iso(startedAt + settings.leaseMs)))) return;
  const subscription = await repo.findSubscriptionById(db, delivery.subscription_id);
  // Deleted or disabled meanwhile: the delete took the delivery with it, the disabling failed it.
  if (!subscription || subscription.disabled_at) return;
  const secret = deps.encryptor.decrypt(subscription.secret_encrypted, webhookSecretContext(subscription.id));
  const unixSeconds = Math.floor(startedAt / 1000);
  const result = await postOnce(
    subscription.url,
    delivery.body,
    {
      'berth-delivery': delivery.id,
      'berth-event': delivery.event_type,
      'berth-signature': signatureHeader(secret, delivery.body, unixSeconds),
    },
    { allowPrivate: settings.allowPrivate, timeoutMs: settings.timeoutMs, excerptBytes: RESPONSE_EXCERPT_BYTES },
  );
  const finishedAt = settings.now();
  const number = delivery.attempts + 1;
  const statusCode = 'statusCode' in result ? result.statusCode : null;
  const error = 'error' in result ? printable(result.error) : null;
  const succeeded = statusCode !== null && statusCode >= 200 && statusCode < 300;
  const retryAt = finishedAt + retryDelayMs(number, settings.firstRetryDelayMs, settings.random);
  const givesUp = !succeeded && retryAt - Date.parse(delivery.created_at) > settings.retryWindowMs;
  const lastError = succeeded ? null : (error ?? `answered ${statusCode}`);
  let disabled = false;
  await db.transaction().execute(async (trx) => {
    await repo.insertAttempt(trx, {
      id: randomUUID(),
      delivery_id: delivery.id,
      number,
      started_at: iso(startedAt),
      duration_ms: Math.max(0, finishedAt - startedAt),
      status_code: statusCode,
      response_excerpt: 'excerpt' in result ? printable(result.excerpt) : null,
      error,
    });
    await repo.updateDelivery(trx, delivery.id, {
      state: succeeded ? 'delivered' : givesUp ? 'failed' : 'pending',
      attempts: number,
      next_attempt_at: succeeded || givesUp ? null : iso(retryAt),
      leased_until: null,
      last_status_code: statusCode,
      last_error: lastError,
    });
    if (succeeded) {
      await repo.clearFailing(trx, subscription.id);
      return;
    }
    await repo.markFailing(trx, subscription.id, iso(startedAt));
    const since = subscription.failing_since ?? iso(startedAt);
    if (finishedAt - Date.parse(since) >= settings.retryWindowMs) {
      const hours = Math.round(settings.retryWindowMs / 3_600_000);
      disabled = await repo.disableSubscription(
        trx,
        subscription.id,
        iso(finishedAt),
        `Every delivery failed for ${hours} h (since ${since}); the last one: ${lastError}.`.slice(0, 1000),
      );
      // Once, by the deliverer that disabled it. The reason leaves out the receiver's answer: the subscription shows that.
      if (disabled) {
        await insertBerthAuditRow(
          trx,
          { workspaceId: subscription.workspace_id },
          {
            action: 'webhook_subscription.disable',
            target: { type: 'webhook_subscription', id: subscription.id, name: subscription.url },
            changedFields: ['disabled_at', 'disabled_reason', 'enabled'],
            reason: `every delivery failed for ${hours} h, since ${since}`,
          },
        );
      }
    }
  });
  if (disabled) deps.logger.warn({ subscription: subscription.id }, 'disabled a webhook subscription whose deliveries failed for the whole retry window');
}
