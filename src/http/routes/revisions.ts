import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { REVISION_STATUSES } from '../../domain/revision-status.js';
import type { Services } from '../../services/index.js';
import { fail } from '../../domain/errors.js';
import { scopeOf, watchKey } from '../auth.js';
import { Envelope } from '../../contract/common.js';
import {
  CreateRevisionBody,
  Deployment,
  DeploymentParams,
  Revision,
  RevisionListQuery,
  RevisionParams,
  RevisionWaitQuery,
} from '../../contract/deployments.js';
import { ConditionalReadHeaders, NotModified } from '../../contract/conditional.js';
import { tagged } from '../entity-tags.js';
import { errorResponses } from '../../contract/errors.js';
import { commaList } from '../query.js';

const tags = ['revisions'];

export const revisionRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { revisions } = services;

  app.get(
    '/v2/deployments/:deployment_id/revisions',
    {
      schema: {
        operationId: 'listRevisions',
        summary: 'List revisions',
        description: 'Newest first. `offset` in the answer is where the next page starts.',
        tags,
        params: DeploymentParams,
        querystring: RevisionListQuery,
        response: { 200: Envelope(Revision), ...errorResponses('deployment_not_found') },
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
      config: { idempotent: true },
      schema: {
        operationId: 'createRevision',
        summary: 'Create a revision',
        description:
          'Always creates a revision from the latest one plus the given changes, and answers the revision. 409 while the deployment is being deleted.',
        tags,
        params: DeploymentParams,
        body: CreateRevisionBody,
        response: {
          201: Revision,
          ...errorResponses('deployment_not_found', 'source_config_invalid', 'secrets_invalid', 'tarball_unknown', 'deployment_deleting'),
        },
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
        operationId: 'getRevision',
        summary: 'Get a revision',
        description:
          'With `wait_for_terminal=<seconds>`, answers as soon as the revision reaches a terminal status, or at the deadline with its current state. ' +
          'Answers an `ETag`; with `If-None-Match` naming it, 304 while the revision is unchanged.',
        tags,
        params: RevisionParams,
        querystring: RevisionWaitQuery,
        headers: ConditionalReadHeaders,
        response: { 200: Revision, 304: NotModified, ...errorResponses('deployment_not_found', 'revision_not_found') },
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
        // The wait outlives its authentication: it ends, answering 401, once its key is revoked.
        const key = watchKey(request, services.tenancy);
        try {
          await services.deploymentEvents.waitForTerminal(scope, deployment_id, revision_id, seconds, AbortSignal.any([gone.signal, key.signal]));
        } finally {
          key.stop();
        }
        if (key.signal.aborted) throw fail('api_key_invalid', 'Invalid API key: it was revoked while the request waited.');
        // Cut short by shutdown: the server has already closed its idle connections, so
        // a kept-alive one would hold the shutdown until its keep-alive timeout.
        if (services.deploymentEvents.isClosing()) reply.header('connection', 'close');
      }
      return tagged(request, reply, await revisions.get(scope, deployment_id, revision_id));
    },
  );

  app.post(
    '/v2/deployments/:deployment_id/revisions/:revision_id/redeploy',
    {
      config: { idempotent: true },
      schema: {
        operationId: 'redeployRevision',
        summary: 'Redeploy a revision',
        description:
          "Creates a new revision with that revision's configuration, secrets and resources, running its image (built again from its commit when the image is gone); answers the deployment. " +
          'Redeploying a revision that is not the latest is a rollback: it pins the deployment (`pinned_revision_id`, `pinned_at`) so that build on push makes no revision until POST …/unpin or an explicit new revision. ' +
          'Redeploying the latest revision pins nothing (a pinned deployment stays pinned, to the new revision).',
        tags,
        params: RevisionParams,
        response: { 200: Deployment, ...errorResponses('deployment_not_found', 'revision_not_found', 'revision_in_progress', 'deployment_deleting') },
      },
    },
    async (request) => revisions.redeploy(scopeOf(request), request.params.deployment_id, request.params.revision_id),
  );

  app.post(
    '/v2/deployments/:deployment_id/revisions/:revision_id/interruption',
    {
      config: { idempotent: true },
      schema: {
        operationId: 'interruptRevision',
        summary: 'Interrupt a revision',
        description: 'Ends an in-progress revision as INTERRUPTED so the next one can run.',
        tags,
        params: RevisionParams,
        response: { 200: Revision, ...errorResponses('deployment_not_found', 'revision_not_found', 'revision_not_in_progress') },
      },
    },
    async (request) => revisions.interrupt(scopeOf(request), request.params.deployment_id, request.params.revision_id),
  );
};
