import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiKey, ApiKeyCreate, ApiKeyParams, CreatedApiKey, Workspace, WorkspaceCreate } from '../../contract/admin.js';
import { errorResponses } from '../../contract/errors.js';
import type { Services } from '../../services/index.js';
import { principalOf } from '../auth.js';
import { NoContent, noContent } from '../replies.js';

const tags = ['admin'];
const config = { access: 'admin' as const };

/** Organization administration: workspaces and API keys. Needs an admin key. */
export const adminRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { tenancy } = services;

  app.post(
    '/v1/workspaces',
    {
      config: { ...config, idempotent: true },
      schema: {
        operationId: 'createWorkspace',
        summary: 'Create a workspace',
        tags,
        body: WorkspaceCreate,
        response: { 201: Workspace, ...errorResponses('workspace_name_taken') },
      },
    },
    async (request, reply) => reply.code(201).send(await tenancy.createWorkspace(principalOf(request), request.body.name)),
  );

  app.get(
    '/v1/workspaces',
    {
      config,
      schema: { operationId: 'listWorkspaces', summary: 'List workspaces', tags, response: { 200: Type.Array(Workspace), ...errorResponses() } },
    },
    async (request) => tenancy.listWorkspaces(principalOf(request)),
  );

  app.post(
    '/v1/api-keys',
    {
      config: { ...config, idempotent: true },
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description:
          'The key itself is in the answer once and never again; only its digest is stored. With `listener_id`, a `listener` key that reaches only the listener protocol of that listener.',
        tags,
        body: ApiKeyCreate,
        response: { 201: CreatedApiKey, ...errorResponses('workspace_not_found', 'listener_not_found') },
      },
    },
    async (request, reply) => reply.code(201).send(await tenancy.createApiKey(principalOf(request), request.body)),
  );

  app.get(
    '/v1/api-keys',
    {
      config,
      schema: { operationId: 'listApiKeys', summary: 'List API keys', tags, response: { 200: Type.Array(ApiKey), ...errorResponses() } },
    },
    async (request) => tenancy.listApiKeys(principalOf(request)),
  );

  app.delete(
    '/v1/api-keys/:key_id',
    {
      config,
      schema: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        tags,
        params: ApiKeyParams,
        response: { 204: NoContent, ...errorResponses('api_key_not_found', 'api_key_self_revoke') },
      },
    },
    async (request, reply) => {
      await tenancy.revokeApiKey(principalOf(request), request.params.key_id);
      return noContent(reply);
    },
  );
};
