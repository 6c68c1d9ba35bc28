import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Services } from '../../services/index.js';
import { principalOf } from '../auth.js';
import { ErrorBody, commonErrors } from '../schemas/common.js';
import { OAuthProvider, OAuthProviderCreate, OAuthProviderUpdate, ProviderDeleted, ProviderId } from '../schemas/oauth-provider.js';

const tags = ['oauth providers'];
// Providers belong to the organization, so any key of it will do and no workspace is needed.
const config = { access: 'organization' as const };
const params = Type.Object({ provider_id: ProviderId('The `provider_id` chosen at creation, not the `id`.') });

/** OAuth providers of the caller's organization. The auth SDK expects 200 on every call, create and delete included. */
export const oauthProviderRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { oauthProviders } = services;

  app.post(
    '/v2/auth/providers',
    {
      config,
      schema: {
        summary: 'Create an OAuth provider',
        tags,
        body: OAuthProviderCreate,
        response: { 200: OAuthProvider, 409: ErrorBody, ...commonErrors },
      },
    },
    async (request) => oauthProviders.create(principalOf(request), request.body),
  );

  app.get(
    '/v2/auth/providers',
    {
      config,
      schema: {
        summary: 'List OAuth providers',
        description: 'A bare array, not a page envelope.',
        tags,
        response: { 200: Type.Array(OAuthProvider), ...commonErrors },
      },
    },
    async (request) => oauthProviders.list(principalOf(request)),
  );

  app.get(
    '/v2/auth/providers/:provider_id',
    { config, schema: { summary: 'Get an OAuth provider', tags, params, response: { 200: OAuthProvider, 404: ErrorBody, ...commonErrors } } },
    async (request) => oauthProviders.get(principalOf(request), request.params.provider_id),
  );

  app.patch(
    '/v2/auth/providers/:provider_id',
    {
      config,
      schema: {
        summary: 'Update an OAuth provider',
        tags,
        params,
        body: OAuthProviderUpdate,
        response: { 200: OAuthProvider, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => oauthProviders.update(principalOf(request), request.params.provider_id, request.body),
  );

  app.delete(
    '/v2/auth/providers/:provider_id',
    { config, schema: { summary: 'Delete an OAuth provider', tags, params, response: { 200: ProviderDeleted, 404: ErrorBody, ...commonErrors } } },
    async (request) => {
      const { provider_id } = request.params;
      await oauthProviders.delete(principalOf(request), provider_id);
      return { message: `OAuth provider '${provider_id}' deleted.` };
    },
  );
};
