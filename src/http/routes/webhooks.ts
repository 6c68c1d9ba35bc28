import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { PushOutcome } from '../../contract/builds.js';
import { errorResponses } from '../../contract/errors.js';
import { IntegrationParams } from '../../contract/integrations.js';
import { DomainError, fail, invalidField } from '../../domain/errors.js';
import { isUuid } from '../../domain/ids.js';
import type { Services } from '../../services/index.js';
import type { WebhookTarget } from '../../services/push-builds.js';
import type { BodyGate } from '../body-gate.js';

export interface WebhookRouteOptions {
  services: Services;
  /** Shared by every copy of the routes (root and prefixed): the bound is the process's. */
  gate: BodyGate;
  /** BERTH_WEBHOOK_BODY_LIMIT_BYTES. */
  bodyLimitBytes: number;
}

/** How soon a refused sender may try again: bodies in flight are read within seconds. */
const BUSY_RETRY_SECONDS = 5;

/**
 * Code hosts' push deliveries. They carry no API key: a delivery proves itself with the
 * integration's webhook secret (`X-Hub-Signature-256` over the raw body), so the body is
 * kept as bytes here, never parsed before the signature is checked.
 *
 * Nothing can authenticate the body before it is read whole, so everything else is checked
 * first, from the URL and the headers alone (`onRequest`, before Fastify reads the body):
 * the integration exists and takes webhooks, a signature header is there, the declared
 * length is within the cap, and a slot of the body gate is free. Refusals close the
 * connection, so an unread body is not drained either.
 */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRouteOptions> = async (app, { services, gate, bodyLimitBytes }) => {
  const targets = new WeakMap<FastifyRequest, WebhookTarget>();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: bodyLimitBytes }, (_request, body, done) => done(null, body));

  app.addHook('onRequest', async (request, reply) => {
    try {
      const target = await services.pushBuilds.admitDelivery(integrationIdOf(request), request.headers);
      const declared = Number(request.headers['content-length'] ?? 0);
      if (declared > bodyLimitBytes) {
        throw fail('body_too_large', `Webhook body of ${declared} bytes refused: the limit is ${bodyLimitBytes} bytes (BERTH_WEBHOOK_BODY_LIMIT_BYTES).`);
      }
      const release = gate.tryEnter(target.workspaceId);
      if (!release) {
        throw new DomainError(
          'webhooks_busy',
          `Too many webhook deliveries are being received at once (at most ${gate.limit}); retry in ${BUSY_RETRY_SECONDS} s.`,
          [],
          BUSY_RETRY_SECONDS,
        );
      }
      // However the request ends (answered, failed, or the sender gone), the slot is freed.
      reply.raw.once('close', release);
      targets.set(request, target);
    } catch (error) {
      reply.header('connection', 'close');
      throw error;
    }
  });

  for (const segment of ['codehost', 'github'] as const) {
    app.post(
      `/v1/integrations/${segment}/:integration_id/webhook`,
      {
        bodyLimit: bodyLimitBytes,
        schema: {
          hide: segment === 'github',
          ...(segment === 'github' ? {} : { operationId: 'receiveCodehostPush' }),
          summary: 'Receive a push from the code host',
          description:
            'The webhook URL of a `github` integration (its `webhook_url`). Verified with the webhook secret; a push to a branch ' +
            'makes a revision of every deployment that tracks it with `build_on_push`. A redelivery builds nothing twice. ' +
            'The integration and the signature header are checked before the body is read; bodies over BERTH_WEBHOOK_BODY_LIMIT_BYTES ' +
            'answer 413, and past BERTH_WEBHOOK_CONCURRENT_BODIES bodies being read at once, 503 with Retry-After.',
          tags: ['integrations'],
          security: [],
          params: IntegrationParams,
          response: {
            200: PushOutcome,
            ...errorResponses(
              'integration_not_found',
              'webhook_not_accepted',
              'webhook_payload_invalid',
              'webhook_signature_invalid',
              'body_too_large',
              'webhooks_busy',
            ),
          },
        },
      },
      async (request) => {
        const target = targets.get(request);
        if (!target) throw new Error('webhook delivery without its admitted target');
        return services.pushBuilds.githubDelivery(target, request.headers, request.body as Buffer);
      },
    );
  }
};

/** The path's id, checked as the schema would check it, since this runs before validation. */
function integrationIdOf(request: FastifyRequest): string {
  const id = (request.params as { integration_id?: string }).integration_id ?? '';
  if (!isUuid(id)) throw invalidField({ type: 'uuid_parsing', loc: ['path', 'integration_id'], msg: 'Input should be a valid UUID', input: id });
  return id.toLowerCase();
}
