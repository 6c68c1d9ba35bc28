/**
 * Outbound webhooks (docs/webhooks.md): the events a subscription may want, the body and
 * signature every delivery carries, and when a failed delivery is tried again.
 */

/** Event types, in the order docs/webhooks.md lists them. `preview.*` are reserved for previews (issue 23, item 4). */
export const WEBHOOK_EVENT_TYPES = [
  'revision.status_changed',
  'deployment.created',
  'deployment.deleted',
  'listener.offline',
  'preview.created',
  'preview.updated',
  'preview.deleted',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** How long a delivery is retried, and how long a subscription may fail before it is disabled. */
export const RETRY_WINDOW_MS = 24 * 3_600_000;
/** The first retry waits about this long; each further one twice as long, up to MAX_RETRY_DELAY_MS. */
export const FIRST_RETRY_DELAY_MS = 10_000;
export const MAX_RETRY_DELAY_MS = 3_600_000;
/** A receiver has this long to answer; and at most this much of its answer is kept. */
export const DELIVERY_TIMEOUT_MS = 10_000;
export const RESPONSE_EXCERPT_BYTES = 1024;

/**
 * The wait before attempt `attempt + 1`, after `attempt` failed ones: exponential with
 * "equal jitter" (half fixed, half random), so receivers that come back are not hit by every
 * sender at the same instant, yet the wait never collapses to nothing.
 */
export function retryDelayMs(attempt: number, firstDelayMs = FIRST_RETRY_DELAY_MS, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_RETRY_DELAY_MS, firstDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** The JSON body of a delivery. Its bytes are what is signed, so it is serialized once and kept. */
export function deliveryBody(delivery: { id: string; eventId: string; type: string; occurredAt: string; payload: unknown }): string {
  return JSON.stringify({ id: delivery.id, event_id: delivery.eventId, type: delivery.type, created_at: delivery.occurredAt, data: delivery.payload });
}

/** Whether a subscription wanting `wanted` gets an event of `type` (`preview.*` stands for every preview event). */
export function wants(wanted: readonly string[], type: string): boolean {
  return wanted.includes(type) || (type.startsWith('preview.') && wanted.includes('preview.*'));
}
