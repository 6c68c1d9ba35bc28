import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PushOutcome } from '../../contract/builds.js';
import { errorResponses } from '../../contract/errors.js';
import { IntegrationParams } from '../../contract/integrations.js';
import type { Services } from '../../services/index.js';

/** GitHub sends push payloads of up to 25 MB. */
const WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024;

/**
 * Code hosts' push deliveries. They carry no API key: a delivery proves itself with the
 * integration's webhook secret (`X-Hub-Signature-256` over the raw body), so the body is
 * kept as bytes here, never parsed before the signature is checked.
 */
export const webhookRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => done(null, body));

  for (const segment of ['codehost', 'github'] as const) {
    app.post(
      `/v1/integrations/${segment}/:integration_id/webhook`,
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        schema: {
          hide: segment === 'github',
          ...(segment === 'github' ? {} : { operationId: 'receiveCodehostPush' }),
          summary: 'Receive a push from the code host',
          description:
            'The webhook URL of a `github` integration (its `webhook_url`). Verified with the webhook secret; a push to a branch ' +
            'makes a revision of every deployment that tracks it with `build_on_push`. A redelivery builds nothing twice.',
          tags: ['integrations'],
          security: [],
          params: IntegrationParams,
          response: {
            200: PushOutcome,
            ...errorResponses('integration_not_found', 'webhook_not_accepted', 'webhook_payload_invalid', 'webhook_signature_invalid'),
          },
        },
      },
      async (request) => services.pushBuilds.githubDelivery(request.params.integration_id, request.headers, request.body as Buffer),
    );
  }
};
