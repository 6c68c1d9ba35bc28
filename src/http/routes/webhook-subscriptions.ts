import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Envelope } from '../../contract/common.js';
import { errorResponses } from '../../contract/errors.js';
import {
  CreatedWebhookSubscription,
  WebhookDelivery,
  WebhookDeliveryParams,
  WebhookListQuery,
  WebhookSubscription,
  WebhookSubscriptionCreateBody,
  WebhookSubscriptionParams,
} from '../../contract/webhooks.js';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';
import { NoContent, noContent } from '../replies.js';

const tags = ['webhooks'];
const ROOT = '/v1/webhook-subscriptions';

/**
 * Outbound webhooks (docs/webhooks.md): what Berth sends to other systems. The inbound
 * code-host webhooks are routes/webhooks.ts.
 */
export const webhookSubscriptionRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { webhooks } = services;

  app.post(
    ROOT,
    {
      config: { idempotent: true },
      schema: {
        operationId: 'createWebhookSubscription',
        summary: 'Create a webhook subscription',
        description:
          'Events of the workspace are POSTed to `url`, signed with the `secret` answered this once (docs/webhooks.md). ' +
          'A URL that is, or resolves to, a loopback, link-local or private address is refused (422) unless BERTH_OUTBOUND_ALLOW_PRIVATE=on.',
        tags,
        body: WebhookSubscriptionCreateBody,
        response: { 201: CreatedWebhookSubscription, ...errorResponses() },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.create(scopeOf(request), request.body)),
  );

  app.get(
    ROOT,
    {
      schema: {
        operationId: 'listWebhookSubscriptions',
        summary: 'List webhook subscriptions',
        description: 'Oldest first; never with their secrets. `offset` in the answer is where the next page starts.',
        tags,
        querystring: WebhookListQuery,
        response: { 200: Envelope(WebhookSubscription), ...errorResponses() },
      },
    },
    async (request) => webhooks.list(scopeOf(request), request.query),
  );

  app.get(
    `${ROOT}/:subscription_id`,
    {
      schema: {
        operationId: 'getWebhookSubscription',
        summary: 'Get a webhook subscription',
        description: 'Without its secret. A disabled subscription says why in `disabled_reason`.',
        tags,
        params: WebhookSubscriptionParams,
        response: { 200: WebhookSubscription, ...errorResponses('webhook_subscription_not_found') },
      },
    },
    async (request) => webhooks.get(scopeOf(request), request.params.subscription_id),
  );

  app.delete(
    `${ROOT}/:subscription_id`,
    {
      schema: {
        operationId: 'deleteWebhookSubscription',
        summary: 'Delete a webhook subscription',
        description: 'With its deliveries; nothing more is sent to it.',
        tags,
        params: WebhookSubscriptionParams,
        response: { 204: NoContent, ...errorResponses('webhook_subscription_not_found') },
      },
    },
    async (request, reply) => {
      await webhooks.delete(scopeOf(request), request.params.subscription_id);
      return noContent(reply);
    },
  );

  app.get(
    `${ROOT}/:subscription_id/deliveries`,
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: "List a subscription's deliveries",
        description: 'Newest first, each with its attempts (status code, at most 1 KB of the answer, or the error).',
        tags,
        params: WebhookSubscriptionParams,
        querystring: WebhookListQuery,
        response: { 200: Envelope(WebhookDelivery), ...errorResponses('webhook_subscription_not_found') },
      },
    },
    async (request) => webhooks.deliveries(scopeOf(request), request.params.subscription_id, request.query),
  );

  app.post(
    `${ROOT}/:subscription_id/deliveries/:delivery_id/redeliver`,
    {
      config: { idempotent: true },
      schema: {
        operationId: 'redeliverWebhook',
        summary: 'Send a delivery again',
        description: 'As a new delivery of the same event (its own id and retries). Refused (422) for a disabled subscription.',
        tags,
        params: WebhookDeliveryParams,
        response: { 202: WebhookDelivery, ...errorResponses('webhook_subscription_not_found', 'webhook_delivery_not_found') },
      },
    },
    async (request, reply) => reply.code(202).send(await webhooks.redeliver(scopeOf(request), request.params.subscription_id, request.params.delivery_id)),
  );
};
