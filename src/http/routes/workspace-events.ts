import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { errorResponses } from '../../contract/errors.js';
import { WorkspaceEventPage, WorkspaceEventQuery, WorkspaceEventStreamQuery } from '../../contract/workspace-events.js';
import type { Services } from '../../services/index.js';
import { scopeOf, watchKey } from '../auth.js';
import { EVENT_STREAM_HEADERS, openEventStream } from '../sse.js';
import { lastEventId } from './events.js';

/** The events of every deployment of the caller's workspace: a page of them, and a live stream. */
export const workspaceEventRoutes: FastifyPluginAsyncTypebox<{ services: Services; writeTimeoutMs: number }> = async (app, { services, writeTimeoutMs }) => {
  const { workspaceEvents } = services;
  app.addHook('preClose', async () => workspaceEvents.close());

  app.get(
    '/v2/events',
    {
      schema: {
        operationId: 'listWorkspaceEvents',
        summary: "List the workspace's events",
        description:
          "The events of every deployment of the workspace, as each deployment's event stream has them (`status`, `log`, `push_ignored_pinned`), " +
          'with `deployment_id` in each `data`; newest first unless `order=asc`. Pass `next_cursor` as `cursor` for the next page. ' +
          'The newest id is where `GET /v2/events/stream` goes on from (`last_event_id`).',
        tags: ['logs'],
        querystring: WorkspaceEventQuery,
        response: { 200: WorkspaceEventPage, ...errorResponses('deployment_not_found') },
      },
    },
    async (request) => workspaceEvents.list(scopeOf(request), request.query),
  );

  app.get(
    '/v2/events/stream',
    {
      schema: {
        operationId: 'streamWorkspaceEvents',
        summary: "Stream the workspace's events",
        description:
          'Server-Sent Events of every deployment of the workspace, named and shaped as in `GET /v2/events` (`data` carries `deployment_id`), each with its `id`. ' +
          'Resume with `Last-Event-ID` (or `?last_event_id=`); without it the stream starts with the next event (read what came before with `GET /v2/events`). ' +
          'A `: keep-alive` comment comes every 15 s.',
        tags: ['logs'],
        querystring: WorkspaceEventStreamQuery,
        response: { ...errorResponses('deployment_not_found') },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { deployment_id: deploymentId, event, last_event_id: fromQuery } = request.query;
      const filters = { ...(deploymentId ? { deploymentId } : {}), ...(event ? { event } : {}) };
      // Asked for by id (0 too: from the first event), or else from now on.
      const resumes = request.headers['last-event-id'] !== undefined || fromQuery !== undefined;
      const asked = resumes ? lastEventId(request, fromQuery) : undefined;
      await workspaceEvents.checkFilters(scope, filters);
      // Fixed before the answer starts: an event written once the headers arrived is sent.
      const after = asked ?? (await workspaceEvents.latestId());
      if (request.method === 'HEAD') return (reply as FastifyReply).code(200).headers(EVENT_STREAM_HEADERS).send();

      const stream = openEventStream(request, reply, writeTimeoutMs);
      // A stream outlives its authentication: it ends once its key is revoked.
      const key = watchKey(request, services.tenancy);
      try {
        await workspaceEvents.stream(scope, filters, after, (item) => stream.send(item), AbortSignal.any([stream.gone, key.signal]));
      } catch (error) {
        if (!stream.gone.aborted) request.log.error({ err: error }, 'workspace event stream failed');
      } finally {
        key.stop();
        if (key.signal.aborted && !stream.gone.aborted) stream.comment('the API key was revoked');
        stream.end();
      }
    },
  );
};
