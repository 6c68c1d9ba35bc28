import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { RegistryTokenQuery } from '../../contract/builds.js';
import type { Registry } from '../../registry/setup.js';

/**
 * The token realm of Berth's image registry (Docker Registry v2 token authentication): the
 * registry sends clients here; they present a Berth registry credential with HTTP Basic
 * authentication (user `oauth2accesstoken`) and get a short-lived registry token for the
 * scopes the credential allows. No API key: the credential is the authentication. Answers
 * in the registry's own error shape, which docker and podman print.
 */
export const registryRoutes: FastifyPluginAsyncTypebox<{ registry: Registry }> = async (app, { registry }) => {
  app.get(
    '/v2/registry/token',
    {
      schema: {
        operationId: 'getRegistryToken',
        summary: 'Registry token realm',
        description: 'Answers `{token, access_token, expires_in, issued_at}` for a valid registry credential; 401 otherwise.',
        tags: ['registry'],
        security: [],
        querystring: RegistryTokenQuery,
      },
    },
    async (request, reply) => {
      const answer = await registry.token({
        ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}),
        ...(request.query.service ? { service: request.query.service } : {}),
        ...(request.query.scope ? { scope: request.query.scope } : {}),
      });
      return reply.code(answer.status).headers(answer.headers).send(answer.body);
    },
  );
};
