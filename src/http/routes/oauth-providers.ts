import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ConditionalReadHeaders, ConditionalWriteHeaders, NotModified } from '../../contract/conditional.js';
import { ifMatchOf, tagged } from '../entity-tags.js';
import { entityTag } from '../../domain/entity-tags.js';
import { errorResponses } from '../../contract/errors.js';
import { OAuthProvider, OAuthProviderCreate, OAuthProviderUpdate, ProviderDeleted, ProviderParams } from '../../contract/oauth-providers.js';
import type { Services } from '../../services/index.js';
import { principalOf } from '../auth.js';

const tags = ['oauth providers'];
// Providers belong to the organization, so any key of it may read them and no workspace is
// needed; changing one changes where every workspace's users sign in, so writes need an admin key.
const config = { access: 'organization' as const };
const adminConfig = { access: 'admin' as const };
const params = ProviderParams;

/** OAuth providers of the caller's organization. The auth SDK expects 200 on every call, create and delete included. */
export const oauthProviderRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { oauthProviders } = services;

  app.post(
    '/v2/auth/providers',
    {
      config: adminConfig,
      schema: {
        operationId: 'createOAuthProvider',
        summary: 'Create an OAuth provider',
        description: 'Needs an admin API key.',
        tags,
        body: OAuthProviderCreate,
        response: { 200: OAuthProvider, ...errorResponses('provider_exists') },
      },
    },
    async (request) => oauthProviders.create(principalOf(request), request.body),
  );

  app.get(
    '/v2/auth/providers',
    {
      config,
      schema: {
        operationId: 'listOAuthProviders',
        summary: 'List OAuth providers',
        description: 'A bare array, not a page envelope.',
        tags,
        response: { 200: Type.Array(OAuthProvider), ...errorResponses() },
      },
    },
    async (request) => oauthProviders.list(principalOf(request)),
  );

  app.get(
    '/v2/auth/providers/:provider_id',
    {
      config,
      schema: {
        operationId: 'getOAuthProvider',
        summary: 'Get an OAuth provider',
        description: 'Answers an `ETag`; with `If-None-Match` naming it, 304 while the provider is unchanged.',
        tags,
        params,
        headers: ConditionalReadHeaders,
        response: { 200: OAuthProvider, 304: NotModified, ...errorResponses('provider_not_found') },
      },
    },
    async (request, reply) => tagged(request, reply, await oauthProviders.get(principalOf(request), request.params.provider_id)),
  );

  app.patch(
    '/v2/auth/providers/:provider_id',
    {
      config: adminConfig,
      schema: {
        operationId: 'updateOAuthProvider',
        summary: 'Update an OAuth provider',
        description: 'Needs an admin API key. With `If-Match`, 412 (`resource_changed`) when the provider changed since that `ETag`.',
        tags,
        params,
        headers: ConditionalWriteHeaders,
        body: OAuthProviderUpdate,
        response: { 200: OAuthProvider, ...errorResponses('provider_not_found', 'resource_changed') },
      },
    },
    async (request, reply) => {
      const view = await oauthProviders.update(principalOf(request), request.params.provider_id, request.body, ifMatchOf(request));
      reply.header('etag', entityTag(view));
      return view;
    },
  );

  app.delete(
    '/v2/auth/providers/:provider_id',
    {
      config: adminConfig,
      schema: {
        operationId: 'deleteOAuthProvider',
        summary: 'Delete an OAuth provider',
        description: 'Needs an admin API key. With `If-Match`, 412 (`resource_changed`) when the provider changed since that `ETag`.',
        tags,
        params,
        headers: ConditionalWriteHeaders,
        response: { 200: ProviderDeleted, ...errorResponses('provider_not_found', 'resource_changed') },
      },
    },
    async (request) => {
      const { provider_id } = request.params;
      await oauthProviders.delete(principalOf(request), provider_id, ifMatchOf(request));
      return { message: `OAuth provider '${provider_id}' deleted.` };
    },
  );
};
