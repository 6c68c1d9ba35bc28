import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Services } from '../../services/index.js';
import { principalOf } from '../auth.js';
import { NoContent, noContent } from '../replies.js';
import { ErrorBody, Nullable, Uuid, commonErrors } from '../schemas/common.js';

const Workspace = Type.Object({
  id: Uuid(),
  organization_id: Uuid(),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

const ApiKey = Type.Object({
  id: Uuid(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('member')]),
  organization_id: Uuid(),
  workspace_id: Nullable(Uuid()),
  key_hint: Type.String({ description: 'First and last characters of the key, to tell keys apart.' }),
  created_at: Type.String({ format: 'date-time' }),
});

const tags = ['admin'];
const config = { access: 'admin' as const };

/** Organization administration: workspaces and API keys. Needs an admin key. */
export const adminRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { tenancy } = services;

  app.post(
    '/v1/workspaces',
    {
      config,
      schema: {
        summary: 'Create a workspace',
        tags,
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 201: Workspace, 409: ErrorBody, ...commonErrors },
      },
    },
    async (request, reply) => reply.code(201).send(await tenancy.createWorkspace(principalOf(request), request.body.name)),
  );

  app.get(
    '/v1/workspaces',
    { config, schema: { summary: 'List workspaces', tags, response: { 200: Type.Array(Workspace), ...commonErrors } } },
    async (request) => tenancy.listWorkspaces(principalOf(request)),
  );

  app.post(
    '/v1/api-keys',
    {
      config,
      schema: {
        summary: 'Create an API key',
        description: 'The key itself is in the answer once and never again; only its digest is stored.',
        tags,
        body: Type.Object({
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          workspace_id: Type.Optional(Nullable(Uuid({ description: 'Bind the key to this workspace.' }))),
          role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('member')], { default: 'member' })),
        }),
        response: { 201: Type.Intersect([ApiKey, Type.Object({ key: Type.String() })]), 404: ErrorBody, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { name, workspace_id, role } = request.body;
      const created = await tenancy.createApiKey(principalOf(request), {
        name: name ?? 'api-key',
        workspaceId: workspace_id ?? null,
        role: role ?? 'member',
      });
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/v1/api-keys',
    { config, schema: { summary: 'List API keys', tags, response: { 200: Type.Array(ApiKey), ...commonErrors } } },
    async (request) => tenancy.listApiKeys(principalOf(request)),
  );

  app.delete(
    '/v1/api-keys/:key_id',
    {
      config,
      schema: {
        summary: 'Revoke an API key',
        tags,
        params: Type.Object({ key_id: Uuid() }),
        response: { 204: NoContent, 404: ErrorBody, 409: ErrorBody, ...commonErrors },
      },
    },
    async (request, reply) => {
      await tenancy.revokeApiKey(principalOf(request), request.params.key_id);
      return noContent(reply);
    },
  );
};
