import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';
import { NoContent, noContent } from '../replies.js';
import { Envelope } from '../../contract/common.js';
import { ConditionalReadHeaders, ConditionalWriteHeaders, NotModified } from '../../contract/conditional.js';
import { ifMatchOf, tagged } from '../entity-tags.js';
import { entityTag } from '../../domain/entity-tags.js';
import { errorResponses } from '../../contract/errors.js';
import { CreatedListener, Listener, ListenerCreateBody, ListenerListQuery, ListenerParams, ListenerPatchBody } from '../../contract/listeners.js';

const tags = ['listeners'];

/** Listeners: the compute infrastructure (Kubernetes clusters) that deployments run on. */
export const listenerRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { listeners } = services;

  app.post(
    '/v2/listeners',
    {
      config: { idempotent: true },
      schema: {
        operationId: 'createListener',
        summary: 'Create a listener',
        description:
          'The pair (workspace, `compute_id`) is unique. The answer holds, this once, the `listener_key` its agent uses for the listener protocol (docs/listener-protocol.md).',
        tags,
        body: ListenerCreateBody,
        response: { 201: CreatedListener, ...errorResponses('listener_exists') },
      },
    },
    async (request, reply) => reply.code(201).send(await listeners.create(scopeOf(request), request.body)),
  );

  app.get(
    '/v2/listeners',
    {
      schema: {
        operationId: 'listListeners',
        summary: 'List listeners',
        description: 'Oldest first. `offset` in the answer is where the next page starts.',
        tags,
        querystring: ListenerListQuery,
        response: { 200: Envelope(Listener), ...errorResponses() },
      },
    },
    async (request) => listeners.list(scopeOf(request), request.query),
  );

  app.get(
    '/v2/listeners/:listener_id',
    {
      schema: {
        operationId: 'getListener',
        summary: 'Get a listener',
        tags,
        description: 'Answers an `ETag`; with `If-None-Match` naming it, 304 while the listener is unchanged.',
        params: ListenerParams,
        headers: ConditionalReadHeaders,
        response: { 200: Listener, 304: NotModified, ...errorResponses('listener_not_found') },
      },
    },
    async (request, reply) => tagged(request, reply, await listeners.get(scopeOf(request), request.params.listener_id)),
  );

  app.patch(
    '/v2/listeners/:listener_id',
    {
      schema: {
        operationId: 'updateListener',
        summary: 'Update a listener',
        description:
          'Changes `version` and `compute_config`; `compute_type` and `compute_id` cannot be changed. ' +
          'Removing a namespace that deployments still use is refused with 409. With `If-Match`, 412 (`resource_changed`) when the listener changed since that `ETag`.',
        tags,
        params: ListenerParams,
        headers: ConditionalWriteHeaders,
        body: ListenerPatchBody,
        response: { 200: Listener, ...errorResponses('listener_not_found', 'field_immutable', 'listener_namespace_in_use', 'resource_changed') },
      },
    },
    async (request, reply) => {
      const view = await listeners.update(scopeOf(request), request.params.listener_id, request.body, ifMatchOf(request));
      reply.header('etag', entityTag(view));
      return view;
    },
  );

  app.delete(
    '/v2/listeners/:listener_id',
    {
      schema: {
        operationId: 'deleteListener',
        summary: 'Delete a listener',
        description:
          'Refused with 409 while any deployment runs on the listener. With `If-Match`, 412 (`resource_changed`) when the listener changed since that `ETag`.',
        tags,
        params: ListenerParams,
        headers: ConditionalWriteHeaders,
        response: { 204: NoContent, ...errorResponses('listener_not_found', 'listener_in_use', 'resource_changed') },
      },
    },
    async (request, reply) => {
      await listeners.delete(scopeOf(request), request.params.listener_id, ifMatchOf(request));
      return noContent(reply);
    },
  );
};
