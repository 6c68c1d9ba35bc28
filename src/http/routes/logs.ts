import { once } from 'node:events';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { invalidField } from '../../domain/errors.js';
import type { Services } from '../../services/index.js';
import { LOG_LEVELS, type LogRequest, type StreamEvent } from '../../services/logs.js';
import { scopeOf } from '../auth.js';
import { ErrorBody, Nullable, OptionalNullable, StringEnum, commonErrors } from '../schemas/common.js';
import { DeploymentParams, RevisionParams } from '../schemas/deployment.js';

const tags = ['logs'];
const KEEP_ALIVE_MS = 15_000;

// Clients send levels in upper case; lower case costs nothing to accept.
const Level = StringEnum([...LOG_LEVELS, ...LOG_LEVELS.map((l) => l.toLowerCase())], {
  description: 'Keep lines at this level or more severe: DEBUG < INFO < WARNING < ERROR < CRITICAL.',
});
const Limit = Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Maximum number of lines.' });
const Cursor = 'Opaque cursor: the `next_offset` of the previous answer.';
const Time = (what: string) => Type.String({ description: `ISO 8601 date-time; ${what} (inclusive). Without a zone: UTC.` });

const LogPage = Type.Object({
  logs: Type.Array(
    Type.Object({
      id: Type.String({ description: 'Unique, increasing with time.' }),
      timestamp: Type.Number({ description: 'Epoch milliseconds.' }),
      level: Type.String(),
      message: Type.String(),
      revision_id: Nullable(Type.String()),
    }),
  ),
  next_offset: Nullable(Type.String({ description: 'Send as `offset` for the next page; null when this page was the last.' })),
});

const LogBody = Type.Object({
  limit: Limit,
  order: StringEnum(['asc', 'desc'] as const, { default: 'desc' }),
  offset: OptionalNullable(Type.String({ description: Cursor })),
  level: OptionalNullable(Level),
  query: OptionalNullable(Type.String({ description: 'Case-insensitive text the message must contain.' })),
  start_time: OptionalNullable(Time('lines at or after it')),
  end_time: OptionalNullable(Time('lines at or before it')),
});

export const logRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { logs } = services;
  app.addHook('preClose', async () => logs.close());

  app.get(
    '/v2/deployments/:deployment_id/revisions/:revision_id/logs',
    {
      schema: {
        summary: 'List revision logs',
        description: 'Build or deploy log lines of a revision, a page at a time; follow `next_offset` until it is null.',
        tags,
        params: RevisionParams,
        querystring: Type.Object({
          type: StringEnum(['build', 'deploy'] as const),
          order: StringEnum(['asc', 'desc'] as const, { default: 'asc' }),
          limit: Limit,
          offset: Type.Optional(Type.String({ description: Cursor })),
          start_time: Type.Optional(Time('lines at or after it')),
          end_time: Type.Optional(Time('lines at or before it')),
          query: Type.Optional(Type.String({ description: 'Case-insensitive text the message must contain.' })),
          level: Type.Optional(Level),
          run_id: Type.Optional(Type.String({ description: 'Accepted for compatibility; ignored.' })),
        }),
        response: { 200: LogPage, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => logs.list(scopeOf(request), logRequest(request.params, request.query.type, request.query, 'query')),
  );

  const postForms = [
    { path: '/v1/projects/:deployment_id/revisions/:revision_id/build_logs', logType: 'build', summary: 'Query build logs of a revision' },
    { path: '/v1/projects/:deployment_id/revisions/:revision_id/deploy_logs', logType: 'deploy', summary: 'Query deploy logs of a revision' },
    { path: '/v1/projects/:deployment_id/deploy_logs', logType: 'deploy', summary: 'Query deploy logs of all revisions' },
  ] as const;
  for (const form of postForms) {
    app.post(
      form.path,
      {
        schema: {
          summary: form.summary,
          description: 'The path\'s project id is the deployment id. The body may be absent; `order` defaults to desc.',
          tags,
          params: form.path.includes(':revision_id') ? RevisionParams : DeploymentParams,
          body: LogBody,
          response: { 200: LogPage, 404: ErrorBody, ...commonErrors },
        },
        // An absent body means "all defaults", which the body schema then fills in.
        preValidation: async (request) => {
          (request as { body: unknown }).body ??= {};
        },
      },
      async (request) => {
        const params = request.params as { deployment_id: string; revision_id?: string };
        return logs.list(scopeOf(request), logRequest(params, form.logType, request.body, 'body'));
      },
    );
  }

  app.get(
    '/v2/deployments/:deployment_id/revisions/:revision_id/timeline',
    {
      schema: {
        summary: 'Revision timeline',
        description: 'Every status the revision went through, oldest first, with when and why.',
        tags,
        params: RevisionParams,
        response: {
          200: Type.Object({
            resources: Type.Array(Type.Object({ status: Type.String(), message: Nullable(Type.String()), at: Type.String({ format: 'date-time' }) })),
          }),
          404: ErrorBody,
          ...commonErrors,
        },
      },
    },
    async (request) => ({
      resources: await logs.timeline(scopeOf(request), request.params.deployment_id, request.params.revision_id),
    }),
  );

  app.get(
    '/v2/deployments/:deployment_id/events',
    {
      schema: {
        summary: 'Stream deployment events',
        description:
          'Server-Sent Events: `event: status` (`{revision_id, status, message, at}`) and `event: log` ' +
          '(`{revision_id, type, level, message, timestamp}`), each with its `id`. Resume with `Last-Event-ID` ' +
          '(or `?last_event_id=`); without it the stream starts at the first event. A `: keep-alive` comment comes every 15 s.',
        tags,
        params: DeploymentParams,
        querystring: Type.Object({ last_event_id: Type.Optional(Type.String({ description: 'Same as the Last-Event-ID header.' })) }),
        response: { 404: ErrorBody, ...commonErrors },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const deploymentId = request.params.deployment_id;
      const afterId = lastEventId(request, request.query.last_event_id);
      await logs.ensureDeployment(scope, deploymentId);

      // From here on the answer is ours to write: Fastify must neither serialize nor end it.
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        // A stream ends at shutdown after the server closed its idle connections; a
        // kept-alive connection would then hold the shutdown until its keep-alive timeout.
        connection: 'close',
      });
      res.write(': connected\n\n');

      const gone = new AbortController();
      res.once('close', () => gone.abort());
      const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      const send = async (event: StreamEvent) => {
        if (!res.write(`id: ${event.id}\nevent: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`)) {
          await once(res, 'drain', { signal: gone.signal });
        }
      };
      try {
        await logs.stream(scope, deploymentId, afterId, send, gone.signal);
      } catch (error) {
        if (!gone.signal.aborted) request.log.error({ err: error }, 'event stream failed');
      } finally {
        clearInterval(keepAlive);
        res.end();
      }
    },
  );
};

/** The header wins: a browser's EventSource sends it on reconnect, keeping the original URL. */
function lastEventId(request: FastifyRequest, fromQuery: string | undefined): number {
  const header = request.headers['last-event-id'];
  const fromHeader = Array.isArray(header) ? header[0] : header;
  const [value, loc] = fromHeader?.trim() ? [fromHeader.trim(), ['header', 'last-event-id']] : [fromQuery?.trim(), ['query', 'last_event_id']];
  if (!value) return 0;
  if (!/^\d{1,15}$/.test(value)) {
    throw invalidField({ type: 'int_parsing', loc, msg: 'Input should be a valid integer, unable to parse string as an integer', input: value });
  }
  return Number(value);
}

interface LogFilters {
  order: 'asc' | 'desc';
  limit: number;
  offset?: string | null;
  level?: string | null;
  query?: string | null;
  start_time?: string | null;
  end_time?: string | null;
}

/** The same filters arrive in the query string (GET) or the body (the POST forms). */
function logRequest(
  ids: { deployment_id: string; revision_id?: string },
  logType: LogRequest['logType'],
  filters: LogFilters,
  part: LogRequest['part'],
): LogRequest {
  return {
    deploymentId: ids.deployment_id,
    revisionId: ids.revision_id,
    logType,
    order: filters.order,
    limit: filters.limit,
    offset: filters.offset,
    level: filters.level,
    query: filters.query,
    startTime: filters.start_time,
    endTime: filters.end_time,
    part,
  };
}
