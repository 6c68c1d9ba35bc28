import { randomUUID } from 'node:crypto';
import type { CreatedWebhookSubscriptionView, CreateWebhookSubscriptionInput, WebhookDeliveryView, WebhookSubscriptionView } from '../contract/webhooks.js';
import { fieldsSet } from '../domain/audit.js';
import { deliveryNotFound, invalidField, subscriptionNotFound } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import type { WebhookEventType } from '../domain/webhooks.js';
import { announceWebhooks } from '../events/recorder.js';
import { targetRefusal } from '../outbound/sender.js';
import { newWebhookSecret, webhookSecretContext } from '../security/webhook-secrets.js';
import { type Executor, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/webhooks.js';
import { allFieldsRead } from './all-fields-read.js';
import { recordChange } from './audit.js';
import type { ServiceDeps } from './index.js';

export interface WebhookOptions {
  /** BERTH_OUTBOUND_ALLOW_PRIVATE. */
  allowPrivate: boolean;
}

/** Subscriptions and their deliveries; the deliverer (engine/webhook-deliverer.ts) sends them. */
export function createWebhookService({ db, encryptor, bus }: ServiceDeps, options: WebhookOptions) {
  const subscriptionOf = async (scope: WorkspaceScope, subscriptionId: string) => {
    const id = subscriptionId.toLowerCase();
    const found = await repo.findSubscription(db, scope.workspaceId, id);
    if (!found) throw subscriptionNotFound(id);
    return found;
  };

  return {
    /** The subscription and its signing secret, answered this once. The URL is checked before anything is stored. */
    async create(scope: WorkspaceScope, input: CreateWebhookSubscriptionInput): Promise<CreatedWebhookSubscriptionView> {
      const { url, events, description, ...unread } = input;
      allFieldsRead(unread);
      const refused = await targetRefusal(url, { allowPrivate: options.allowPrivate });
      if (refused) throw invalidField({ loc: ['body', 'url'], msg: `Webhook URL refused: ${refused}.`, type: 'url_refused', input: url });
      const id = randomUUID();
      const secret = newWebhookSecret();
      const record: repo.SubscriptionRecord = {
        id,
        workspace_id: scope.workspaceId,
        url,
        events: [...events],
        secret_encrypted: encryptor.encrypt(secret, webhookSecretContext(id)),
        description: description ?? null,
        created_at: nowIso(),
        failing_since: null,
        disabled_at: null,
        disabled_reason: null,
      };
      await db.transaction().execute(async (trx) => {
        await repo.insertSubscription(trx, record);
        await recordChange(trx, scope, {
          action: 'webhook_subscription.create',
          target: { type: 'webhook_subscription', id, name: url },
          changedFields: fieldsSet(input),
        });
      });
      return { ...subscriptionView(record), secret };
    },

    async list(scope: WorkspaceScope, page: { limit: number; offset: number }): Promise<{ resources: WebhookSubscriptionView[]; offset: number }> {
      const records = await repo.listSubscriptions(db, scope.workspaceId, page);
      return { resources: records.map(subscriptionView), offset: page.offset + records.length };
    },

    get: async (scope: WorkspaceScope, subscriptionId: string): Promise<WebhookSubscriptionView> =>
      subscriptionView(await subscriptionOf(scope, subscriptionId)),

    /** Removes the subscription with its deliveries and their attempts. */
    async delete(scope: WorkspaceScope, subscriptionId: string): Promise<void> {
      const id = subscriptionId.toLowerCase();
      await db.transaction().execute(async (trx) => {
        const current = await repo.findSubscription(trx, scope.workspaceId, id);
        if (!current || !(await repo.deleteSubscription(trx, scope.workspaceId, id))) throw subscriptionNotFound(id);
        await recordChange(trx, scope, { action: 'webhook_subscription.delete', target: { type: 'webhook_subscription', id, name: current.url } });
      });
    },

    /** The subscription's deliveries, newest first, each with its attempts. */
    async deliveries(scope: WorkspaceScope, subscriptionId: string, page: { limit: number; offset: number }) {
      const subscription = await subscriptionOf(scope, subscriptionId);
      const rows = await repo.listDeliveries(db, subscription.id, page);
      const attempts = await repo.attemptsOf(
        db,
        rows.map((row) => row.id),
      );
      return { resources: rows.map((row) => deliveryView(row, attempts)), offset: page.offset + rows.length };
    },

    /**
     * Sends a delivery again, as a new delivery (its own id, attempts and retries) with the
     * same event; the subscription must be enabled.
     */
    async redeliver(scope: WorkspaceScope, subscriptionId: string, deliveryId: string): Promise<WebhookDeliveryView> {
      const subscription = await subscriptionOf(scope, subscriptionId);
      const original = await repo.findDelivery(db, subscription.id, deliveryId.toLowerCase());
      if (!original) throw deliveryNotFound(deliveryId.toLowerCase());
      if (subscription.disabled_at) {
        throw invalidField({
          loc: ['path', 'subscription_id'],
          msg: `Webhook subscription ID ${subscription.id} is disabled (${subscription.disabled_reason ?? 'no reason recorded'}); create a new subscription to receive deliveries again.`,
          type: 'subscription_disabled',
        });
      }
      const now = nowIso();
      const id = randomUUID();
      const body = JSON.stringify({ ...(JSON.parse(original.body) as object), id });
      const row: repo.DeliveryRow = {
        id,
        subscription_id: subscription.id,
        event_id: original.event_id,
        event_type: original.event_type,
        body,
        state: 'pending',
        attempts: 0,
        created_at: now,
        next_attempt_at: now,
        leased_until: null,
        last_status_code: null,
        last_error: null,
        redelivery_of: original.id,
      };
      await db.transaction().execute(async (trx) => {
        await repo.insertDeliveries(trx, [row]);
        await recordChange(trx, scope, { action: 'webhook_delivery.redeliver', target: { type: 'webhook_delivery', id, name: original.id } });
      });
      announceWebhooks(bus);
      return deliveryView(row, []);
    },
  };
}

/**
 * Writes an event of a workspace into the outbox, with the executor of the change's own
 * transaction; answers whether a row was written (call `announceWebhooks` after commit then).
 * The payload is what receivers see: never a secret.
 */
export function outboxEvent(trx: Executor, workspaceId: string, type: WebhookEventType, payload: unknown): Promise<boolean> {
  return repo.insertWebhookEvent(trx, workspaceId, { id: randomUUID(), type, payload, occurredAt: nowIso() });
}

function subscriptionView(record: repo.SubscriptionRecord): WebhookSubscriptionView {
  return {
    id: record.id,
    url: record.url,
    events: record.events,
    description: record.description,
    created_at: record.created_at,
    enabled: record.disabled_at === null,
    disabled_at: record.disabled_at,
    disabled_reason: record.disabled_reason,
    failing_since: record.failing_since,
  };
}

function deliveryView(row: repo.DeliveryRow, attempts: repo.AttemptRow[]): WebhookDeliveryView {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    event_id: row.event_id,
    event_type: row.event_type,
    state: row.state,
    attempts: attempts
      .filter((attempt) => attempt.delivery_id === row.id)
      .map((attempt) => ({
        number: attempt.number,
        started_at: attempt.started_at,
        duration_ms: attempt.duration_ms,
        status_code: attempt.status_code,
        response_excerpt: attempt.response_excerpt,
        error: attempt.error,
      })),
    created_at: row.created_at,
    next_attempt_at: row.next_attempt_at,
    redelivery_of: row.redelivery_of,
  };
}
