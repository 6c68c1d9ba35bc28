import { type Static, Type } from 'typebox';
import { WEBHOOK_EVENT_TYPES } from '../domain/webhooks.js';
import { DateTime, Nullable, PaginationQuery, StringEnum, Uuid } from './common.js';

/** What a subscription may ask for: every event type, and `preview.*` for all preview events. */
export const SUBSCRIBABLE_EVENTS = [...WEBHOOK_EVENT_TYPES, 'preview.*'] as const;

export const WebhookSubscriptionCreateBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'Where deliveries are POSTed (http or https). Refused (422) when it resolves to a non-public address, unless BERTH_OUTBOUND_ALLOW_PRIVATE=on.',
    }),
    events: Type.Array(StringEnum(SUBSCRIBABLE_EVENTS), { minItems: 1, maxItems: SUBSCRIBABLE_EVENTS.length, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { title: 'WebhookSubscriptionCreate' },
);

export const WebhookSubscription = Type.Object(
  {
    id: Uuid(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: Nullable(Type.String()),
    created_at: DateTime(),
    enabled: Type.Boolean({ description: 'False once deliveries failed for 24 h; `disabled_reason` says why.' }),
    disabled_at: Nullable(DateTime()),
    disabled_reason: Nullable(Type.String()),
    failing_since: Nullable(DateTime('Since when every delivery failed; null after a success.')),
  },
  { title: 'WebhookSubscription' },
);

export const CreatedWebhookSubscription = Type.Object(
  {
    ...WebhookSubscription.properties,
    secret: Type.String({ description: 'The signing secret (docs/webhooks.md), shown this once; stored encrypted and never answered again.' }),
  },
  { title: 'CreatedWebhookSubscription' },
);

export const WebhookAttempt = Type.Object(
  {
    number: Type.Integer(),
    started_at: DateTime(),
    duration_ms: Type.Integer(),
    status_code: Nullable(Type.Integer()),
    response_excerpt: Nullable(Type.String({ description: 'At most the first 1 KB of the answer.' })),
    error: Nullable(Type.String({ description: 'Why no answer came (refused address, timeout, connection error).' })),
  },
  { title: 'WebhookAttempt' },
);

export const WebhookDelivery = Type.Object(
  {
    id: Uuid({ description: 'Sent as `Berth-Delivery` and as `id` in the body.' }),
    subscription_id: Uuid(),
    event_id: Uuid(),
    event_type: Type.String(),
    state: StringEnum(['pending', 'delivered', 'failed'] as const),
    attempts: Type.Array(WebhookAttempt),
    created_at: DateTime(),
    next_attempt_at: Nullable(DateTime()),
    redelivery_of: Nullable(Uuid()),
  },
  { title: 'WebhookDelivery' },
);

export const WebhookSubscriptionParams = Type.Object({ subscription_id: Uuid() });
export const WebhookDeliveryParams = Type.Object({ subscription_id: Uuid(), delivery_id: Uuid() });
export const WebhookListQuery = Type.Object({ ...PaginationQuery });

export type CreateWebhookSubscriptionInput = Static<typeof WebhookSubscriptionCreateBody>;
export type WebhookSubscriptionView = Static<typeof WebhookSubscription>;
export type CreatedWebhookSubscriptionView = Static<typeof CreatedWebhookSubscription>;
export type WebhookDeliveryView = Static<typeof WebhookDelivery>;
