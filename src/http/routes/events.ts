import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DeploymentParams } from '../../contract/deployments.js';
import { errorResponses } from '../../contract/errors.js';
import { EventStreamQuery } from '../../contract/logs.js';
import { invalidField } from '../../domain/errors.js';
import type { Services } from '../../services/index.js';
import { scopeOf, watchKey } from '../auth.js';
import { EVENT_STREAM_HEADERS, openEventStream } from '../sse.js';

/** A deployment's status changes and log lines as they happen, over Server-Sent Events. */
export const eventRoutes: FastifyPluginAsyncTypebox<{ services: Services; writeTimeoutMs: number }> = async (app, { services, writeTimeoutMs }) => {
  const { deploymentEvents } = services;
  app.addHook('preClose', async () => deploymentEvents.close());

  app.get(
    '/v2/deployments/:deployment_id/events',
    {
      schema: {
        operationId: 'streamDeploymentEvents',
        summary: 'Stream deployment events',
        description:
          'Server-Sent Events: `event: status` (`{revision_id, status, message, at}`) and `event: log` ' +
          '(`{revision_id, type, level, message, timestamp}`), and `event: push_ignored_pinned` (`{revision_id, commit, message, at}`: a push build on push ' +
          'recorded but built nothing for, because the deployment is pinned to `revision_id`), each with its `id`. Resume with `Last-Event-ID` ' +
          '(or `?last_event_id=`); without it the stream starts at the first event. A `: keep-alive` comment comes every 15 s.',
        tags: ['logs'],
        params: DeploymentParams,
        querystring: EventStreamQuery,
        response: { ...errorResponses('deployment_not_found') },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const deploymentId = request.params.deployment_id;
      const afterId = lastEventId(request, request.query.last_event_id);
      await deploymentEvents.ensureDeployment(scope, deploymentId);
      // HEAD (answered by this handler too): the stream's headers, and no stream.
      if (request.method === 'HEAD') return (reply as FastifyReply).code(200).headers(EVENT_STREAM_HEADERS).send();

      const stream = openEventStream(request, reply, writeTimeoutMs);
      // A stream outlives its authentication: it ends once its key is revoked.
      const key = watchKey(request, services.tenancy);
      try {
        await deploymentEvents.stream(scope, deploymentId, afterId, (event) => stream.send(event), AbortSignal.any([stream.gone, key.signal]));
      } catch (error) {
        if (!stream.gone.aborted) request.log.error({ err: error }, 'event stream failed');
      } finally {
        key.stop();
        if (key.signal.aborted && !stream.gone.aborted) stream.comment('the API key was revoked');
        stream.end();
      }
    },
  );
};

/** The header wins: a browser's EventSource sends it on reconnect, keeping the original URL. */
export function lastEventId(request: FastifyRequest, fromQuery: string | undefined): number {
  const header = request.headers['last-event-id'];
  const fromHeader = Array.isArray(header) ? header[0] : header;
  const [value, loc] = fromHeader?.trim() ? [fromHeader.trim(), ['header', 'last-event-id']] : [fromQuery?.trim(), ['query', 'last_event_id']];
  if (!value) return 0;
  if (!/^\d{1,15}$/.test(value)) {
    throw invalidField({ type: 'int_parsing', loc, msg: 'Input should be a valid integer, unable to parse string as an integer', input: value });
  }
  return Number(value);
}
