import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { RunnerLabelRequirement, RunnerLabelRequirementBody, WorkspaceParams } from '../../contract/admin.js';
import { errorResponses } from '../../contract/errors.js';
import { ListenerParams } from '../../contract/listeners.js';
import type { Services } from '../../services/index.js';
import { principalOf, scopeOf } from '../auth.js';

/** A workspace's labels are organization administration; a listener's go with the listener (the runner protocol's tag is for runner keys only). */
const adminTags = ['admin'];
const tags = ['listeners'];
const DESCRIPTION =
  'A build is claimed only by a runner advertising every label its workspace requires and every label the listener of its deployment ' +
  'requires (docs/build-runners.md). Jobs already queued keep what they required.';

/** Placement of builds on runners: the labels a workspace (an administrator's setting) or a listener requires. */
export const runnerLabelRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { runnerLabels } = services;
  const admin = { access: 'admin' as const };
  const workspacePath = '/v1/workspaces/:workspace_id/runner-labels';
  const listenerPath = '/v2/listeners/:listener_id/runner-labels';

  app.get(
    workspacePath,
    {
      config: admin,
      schema: {
        operationId: 'getWorkspaceRunnerLabels',
        summary: 'Labels the runners of a workspace’s builds must have',
        description: DESCRIPTION,
        tags: adminTags,
        params: WorkspaceParams,
        response: { 200: RunnerLabelRequirement, ...errorResponses('workspace_not_found') },
      },
    },
    async (request) => runnerLabels.workspaceLabels(principalOf(request), request.params.workspace_id),
  );

  app.put(
    workspacePath,
    {
      config: admin,
      schema: {
        operationId: 'setWorkspaceRunnerLabels',
        summary: 'Require labels of the runners of a workspace’s builds',
        description: DESCRIPTION,
        tags: adminTags,
        params: WorkspaceParams,
        body: RunnerLabelRequirementBody,
        response: { 200: RunnerLabelRequirement, ...errorResponses('workspace_not_found') },
      },
    },
    async (request) => runnerLabels.setWorkspaceLabels(principalOf(request), request.params.workspace_id, request.body),
  );

  app.get(
    listenerPath,
    {
      schema: {
        operationId: 'getListenerRunnerLabels',
        summary: 'Labels the runners of builds for a listener’s deployments must have',
        description: DESCRIPTION,
        tags,
        params: ListenerParams,
        response: { 200: RunnerLabelRequirement, ...errorResponses('listener_not_found') },
      },
    },
    async (request) => runnerLabels.listenerLabels(scopeOf(request), request.params.listener_id),
  );

  app.put(
    listenerPath,
    {
      schema: {
        operationId: 'setListenerRunnerLabels',
        summary: 'Require labels of the runners of builds for a listener’s deployments',
        description: DESCRIPTION,
        tags,
        params: ListenerParams,
        body: RunnerLabelRequirementBody,
        response: { 200: RunnerLabelRequirement, ...errorResponses('listener_not_found') },
      },
    },
    async (request) => runnerLabels.setListenerLabels(scopeOf(request), request.params.listener_id, request.body),
  );
};
