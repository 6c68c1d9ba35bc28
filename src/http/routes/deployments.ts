import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DEPLOYMENT_STATUSES } from '../../domain/deployment-status.js';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';
import { NoContent, noContent } from '../replies.js';
import { Envelope } from '../../contract/common.js';
import { CreateDeploymentBody, Deployment, DeploymentListQuery, DeploymentParams, MergeSecretsBody, PatchDeploymentBody } from '../../contract/deployments.js';
import { errorResponses } from '../../contract/errors.js';
import { commaList, uuidList } from '../query.js';
import { ConditionalReadHeaders, ConditionalWriteHeaders, NotModified } from '../../contract/conditional.js';
import { deploymentTag } from '../../services/deployments.js';
import { ifMatchOf, tagged } from '../entity-tags.js';

const tags = ['deployments'];

export const deploymentRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { deployments } = services;

  app.post(
    '/v2/deployments',
    {
      config: { idempotent: true },
      schema: {
        operationId: 'createDeployment',
        summary: 'Create a deployment',
        description: 'Creates the deployment and its first revision; `latest_revision_id` is that revision.',
        tags,
        body: CreateDeploymentBody,
        response: {
          201: Deployment,
          ...errorResponses(
            'source_config_invalid',
            'listener_required',
            'secrets_invalid',
            'tarball_unknown',
            'image_not_in_workspace',
            'integration_not_found',
            'deployment_name_taken',
            'database_limit_reached',
            'codehost_failed',
            'codehost_timeout',
          ),
        },
      },
    },
    async (request, reply) => reply.code(201).send(await deployments.create(scopeOf(request), request.body)),
  );

  app.get(
    '/v2/deployments',
    {
      schema: {
        operationId: 'listDeployments',
        summary: 'List deployments',
        description: 'Newest first. `offset` in the answer is where the next page starts.',
        tags,
        querystring: DeploymentListQuery,
        response: { 200: Envelope(Deployment), ...errorResponses() },
      },
    },
    async (request) => {
      const q = request.query;
      const filters = {
        nameContains: q.name_contains,
        name: q.name,
        statuses: commaList(q.status, 'status', DEPLOYMENT_STATUSES),
        remoteReconciled: q.remote_reconciled,
        tagValueIds: uuidList(q.tag_value_ids, 'tag_value_ids'),
        imageVersion: q.image_version,
        deploymentType: q.deployment_type,
        ids: uuidList(q.deployment_ids, 'deployment_ids'),
        parentId: q.parent_deployment_id?.toLowerCase(),
        isPreview: q.is_preview,
      };
      return deployments.list(scopeOf(request), filters, { limit: q.limit, offset: q.offset });
    },
  );

  app.get(
    '/v2/deployments/:deployment_id',
    {
      schema: {
        operationId: 'getDeployment',
        summary: 'Get a deployment',
        tags,
        description: 'Answers an `ETag`; with `If-None-Match` naming it, 304 while the deployment is unchanged.',
        params: DeploymentParams,
        headers: ConditionalReadHeaders,
        response: { 200: Deployment, 304: NotModified, ...errorResponses('deployment_not_found') },
      },
    },
    async (request, reply) => {
      const view = await deployments.get(scopeOf(request), request.params.deployment_id);
      return tagged(request, reply, view, deploymentTag(view));
    },
  );

  app.patch(
    '/v2/deployments/:deployment_id',
    {
      schema: {
        operationId: 'updateDeployment',
        summary: 'Update a deployment',
        description:
          'Null or absent fields are left as they are. Setting any `source_revision_config` field, changing `secrets` or changing ' +
          '`source_config.resource_spec` creates a new revision, which the answer already names as `latest_revision_id`; other ' +
          '`source_config` fields change in place. `name`, `source`, `integration_id`, `repo_url`, `deployment_type`, `listener_id` ' +
          'and `listener_config` cannot change (400). `previews` (preview deployments, docs/previews.md) changes in place, field by field; ' +
          'a preview cannot have previews (400 `previews_invalid`). With `If-Match`, 412 (`resource_changed`) when the deployment changed since that `ETag`.',
        tags,
        params: DeploymentParams,
        headers: ConditionalWriteHeaders,
        body: PatchDeploymentBody,
        response: {
          200: Deployment,
          ...errorResponses(
            'deployment_not_found',
            'field_immutable',
            'source_config_invalid',
            'secrets_invalid',
            'previews_invalid',
            'tarball_unknown',
            'image_not_in_workspace',
            'deployment_deleting',
            'resource_changed',
          ),
        },
      },
    },
    async (request, reply) => {
      const view = await deployments.patch(scopeOf(request), request.params.deployment_id, request.body, ifMatchOf(request));
      reply.header('etag', deploymentTag(view));
      return view;
    },
  );

  app.patch(
    '/v2/deployments/:deployment_id/secrets',
    {
      schema: {
        operationId: 'mergeDeploymentSecrets',
        summary: "Set and remove a deployment's secrets by name",
        description:
          'Merges with the current secrets by name: `set` adds or replaces, `remove` drops (the last one too), the others keep their values, ' +
          'so a client needs no value it did not set. A change creates a new revision exactly as a PATCH of the deployment with the merged ' +
          'full set would; no change creates none. A name both set and removed, or a merged set over the limits of `secrets`, is a 422. ' +
          'With `If-Match`, 412 (`resource_changed`) when the deployment changed since that `ETag`.',
        tags,
        params: DeploymentParams,
        headers: ConditionalWriteHeaders,
        body: MergeSecretsBody,
        response: {
          200: Deployment,
          ...errorResponses('deployment_not_found', 'secrets_invalid', 'deployment_deleting', 'resource_changed'),
        },
      },
    },
    async (request, reply) => {
      const { set = [], remove = [] } = request.body;
      const view = await deployments.mergeSecrets(scopeOf(request), request.params.deployment_id, { set, remove }, ifMatchOf(request));
      reply.header('etag', deploymentTag(view));
      return view;
    },
  );

  app.post(
    '/v2/deployments/:deployment_id/unpin',
    {
      schema: {
        operationId: 'unpinDeployment',
        summary: 'Unpin a deployment',
        description:
          'Clears the pin a rollback set (`pinned_revision_id`, `pinned_at`), so build on push follows the branch again from the next push ' +
          '(pushes ignored while pinned are not replayed). Idempotent: a deployment that is not pinned is answered as it is. Answers the deployment.',
        tags,
        params: DeploymentParams,
        response: { 200: Deployment, ...errorResponses('deployment_not_found') },
      },
    },
    async (request, reply) => {
      const view = await deployments.unpin(scopeOf(request), request.params.deployment_id);
      reply.header('etag', deploymentTag(view));
      return view;
    },
  );

  app.delete(
    '/v2/deployments/:deployment_id',
    {
      schema: {
        operationId: 'deleteDeployment',
        summary: 'Delete a deployment',
        description:
          'The deployment goes to AWAITING_DELETE while its resources are torn down, then answers 404. With `If-Match`, 412 (`resource_changed`) when the deployment changed since that `ETag`.',
        tags,
        params: DeploymentParams,
        headers: ConditionalWriteHeaders,
        response: { 204: NoContent, ...errorResponses('deployment_not_found', 'resource_changed') },
      },
    },
    async (request, reply) => {
      await deployments.delete(scopeOf(request), request.params.deployment_id, ifMatchOf(request));
      return noContent(reply);
    },
  );
};
