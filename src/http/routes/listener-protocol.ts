import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { errorResponses } from '../../contract/errors.js';
import {
  DesiredState,
  DesiredStateQuery,
  HeartbeatBody,
  HeartbeatResult,
  LISTENER_PROTOCOL_HEADER,
  LISTENER_PROTOCOL_PREFIX,
  ReportsBody,
  ReportsResult,
} from '../../contract/listener-protocol.js';
import { fail } from '../../domain/errors.js';
import type { Services } from '../../services/index.js';
import { listenerOf, watchKey } from '../auth.js';

const tags = ['listener-protocol'];
const config = { access: 'listener' as const };
const PROTOCOL_ERRORS = ['listener_protocol_unsupported', 'listener_not_found'] as const;

/**
 * The listener protocol, version 1 (docs/listener-protocol.md): an agent next to the user's
 * compute reads what should run there and reports what happened. Only listener keys reach it.
 */
export const listenerProtocolRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { listenerProtocol } = services;
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  const checkVersion = (request: FastifyRequest) => {
    const header = request.headers[LISTENER_PROTOCOL_HEADER];
    listenerProtocol.checkVersion(Array.isArray(header) ? header[0] : header);
  };

  app.get(
    `${LISTENER_PROTOCOL_PREFIX}/state`,
    {
      config,
      schema: {
        operationId: 'getListenerDesiredState',
        summary: "The listener's desired state",
        description:
          'Everything the listener should run, as a full snapshot. With `since` (the `generation` last received) and `wait`, answers ' +
          'as soon as the generation grows past `since`, or after `wait` seconds with the current state. Every call counts as a heartbeat.',
        tags,
        querystring: DesiredStateQuery,
        response: { 200: DesiredState, ...errorResponses(...PROTOCOL_ERRORS) },
      },
    },
    async (request, reply) => {
      checkVersion(request);
      // 'close' on the response fires when the client hangs up before the answer.
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      // The wait outlives its authentication: it ends, answering 401, once its key is revoked.
      const key = watchKey(request, services.tenancy);
      try {
        const state = await listenerProtocol.state(listenerOf(request), request.query, AbortSignal.any([gone.signal, key.signal, closing.signal]));
        if (key.signal.aborted) throw fail('api_key_invalid', 'Invalid API key: it was revoked while the request waited.');
        if (closing.signal.aborted) reply.header('connection', 'close');
        return state;
      } finally {
        key.stop();
      }
    },
  );

  app.post(
    `${LISTENER_PROTOCOL_PREFIX}/reports`,
    {
      config,
      schema: {
        operationId: 'reportListenerObservedState',
        summary: 'Report what the listener did',
        description:
          'Revision reports (DEPLOYING, DEPLOYED with its URL, DEPLOY_FAILED with the reason, deploy log lines) and finished deletions. ' +
          'Each answers `applied`, `unchanged` (a retried report) or `fenced` (about a revision that is no longer the one to run, or a deployment not on this listener).',
        tags,
        body: ReportsBody,
        response: { 200: ReportsResult, ...errorResponses(...PROTOCOL_ERRORS) },
      },
    },
    async (request) => {
      checkVersion(request);
      return listenerProtocol.report(listenerOf(request), request.body);
    },
  );

  app.post(
    `${LISTENER_PROTOCOL_PREFIX}/heartbeat`,
    {
      config,
      schema: {
        operationId: 'sendListenerHeartbeat',
        summary: 'Listener heartbeat',
        description: "Records the agent's version and that it is alive; the listener shows `ONLINE` while heartbeats (or any protocol calls) arrive.",
        tags,
        body: HeartbeatBody,
        response: { 200: HeartbeatResult, ...errorResponses(...PROTOCOL_ERRORS) },
      },
    },
    async (request) => {
      checkVersion(request);
      return listenerProtocol.heartbeat(listenerOf(request), request.body);
    },
  );
};
