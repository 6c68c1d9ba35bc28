import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { REVISION_STATUSES } from '../../domain/revision-status.js';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';
import { Envelope, ErrorBody, PaginationQuery, commonErrors } from '../schemas/common.js';
import { CreateRevisionBody, Deployment, DeploymentParams, Revision, RevisionParams } from '../schemas/deployment.js';
import { commaList } from '../schemas/query.js';

const tags = ['revisions'];

export const revisionRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { revisions } = services;

  app.get(
    '/v2/deployments/:deployment_id/revisions',
    {
      schema: {
        summary: 'List revisions',
        description: 'Newest first. `offset` in the answer is where the next page starts.',
        tags,
        params: DeploymentParams,
        querystring: Type.Object({
          ...PaginationQuery,
          status: Type.Optional(Type.String({ description: `Comma-separated: ${REVISION_STATUSES.join(', ')}.` })),
          remote_reconciled: Type.Optional(Type.Boolean()),
        }),
        response: { 200: Envelope(Revision), 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => {
      const { limit, offset, status, remote_reconciled } = request.query;
      const filters = { statuses: commaList(status, 'status', REVISION_STATUSES), remoteReconciled: remote_reconciled };
      return revisions.list(scopeOf(request), request.params.deployment_id, filters, { limit, offset });
    },
  );

  app.post(
    '/v2/deployments/:deployment_id/revisions',
    {
      schema: {
        summary: 'Create a revision',
        description: 'Always creates a revision from the latest one plus the given changes, and answers the revision.',
        tags,
        params: DeploymentParams,
        body: CreateRevisionBody,
        response: { 201: Revision, 400: ErrorBody, 404: ErrorBody, ...commonErrors },
      },
      // Every field is optional, so no body at all means the same as `{}`.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => reply.code(201).send(await revisions.create(scopeOf(request), request.params.deployment_id, request.body)),
  );

  app.get(
    '/v2/deployments/:deployment_id/revisions/:revision_id',
    {
      schema: {
        summary: 'Get a revision',
        description:
          'With `wait_for_terminal=<seconds>`, answers as soon as the revision reaches a terminal status, or at the deadline with its current state.',
        tags,
        params: RevisionParams,
        querystring: Type.Object({
          wait_for_terminal: Type.Optional(Type.Number({ minimum: 0, maximum: 300, description: 'Seconds to wait at most (0..300).' })),
        }),
        response: { 200: Revision, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { deployment_id, revision_id } = request.params;
      const seconds = request.query.wait_for_terminal;
      if (seconds) {
        // 'close' on the response fires when the client hangs up before the answer.
        const gone = new AbortController();
        reply.raw.once('close', () => gone.abort());
        await services.logs.waitForTerminal(scope, deployment_id, revision_id, seconds, gone.signal);
        // Cut short by shutdown: the server has already closed its idle connections, so
        // a kept-alive one would hold the shutdown until its keep-alive timeout.
        if (services.logs.isClosing()) reply.header('connection', 'close');
      }
      return revisions.get(scope, deployment_id, revision_id);
    },
  );

  app.post(
    '/v2/deployments/:deployment_id/revisions/:revision_id/redeploy',
    {
      schema: {
        summary: 'Redeploy a revision',
        description: "Creates a new revision with that revision's configuration, secrets and resources (rollback); answers the deployment.",
        tags,
        params: RevisionParams,
        response: { 200: Deployment, 400: ErrorBody, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => revisions.redeploy(scopeOf(request), request.params.deployment_id, request.params.revision_id),
  );

  app.post(
    '/v2/deployments/:deployment_id/revisions/:revision_id/interruption',
    {
      schema: {
        summary: 'Interrupt a revision',
        description: 'Ends an in-progress revision as INTERRUPTED so the next one can run.',
        tags,
        params: RevisionParams,
        response: { 200: Revision, 400: ErrorBody, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => revisions.interrupt(scopeOf(request), request.params.deployment_id, request.params.revision_id),
  );
};
