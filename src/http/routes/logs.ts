import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { DeploymentParams, RevisionParams } from '../../contract/deployments.js';
import { errorResponses } from '../../contract/errors.js';
import { LogPage, LogQuery, LogQueryBody, Timeline } from '../../contract/logs.js';
import type { Services } from '../../services/index.js';
import type { LogRequest } from '../../services/logs.js';
import { scopeOf } from '../auth.js';

const tags = ['logs'];

export const logRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { logs } = services;

  app.get(
    '/v2/deployments/:deployment_id/revisions/:revision_id/logs',
    {
      schema: {
        operationId: 'listRevisionLogs',
        summary: 'List revision logs',
        description: 'Build or deploy log lines of a revision, a page at a time; follow `next_offset` until it is null.',
        tags,
        params: RevisionParams,
        querystring: LogQuery,
        response: { 200: LogPage, ...errorResponses('deployment_not_found', 'revision_not_found') },
      },
    },
    async (request) => logs.list(scopeOf(request), logRequest(request.params, request.query.type, request.query, 'query')),
  );

  const postForms = [
    {
      path: '/v1/projects/:deployment_id/revisions/:revision_id/build_logs',
      logType: 'build',
      operationId: 'queryBuildLogs',
      summary: 'Query build logs of a revision',
    },
    {
      path: '/v1/projects/:deployment_id/revisions/:revision_id/deploy_logs',
      logType: 'deploy',
      operationId: 'queryDeployLogs',
      summary: 'Query deploy logs of a revision',
    },
    { path: '/v1/projects/:deployment_id/deploy_logs', logType: 'deploy', operationId: 'queryDeploymentLogs', summary: 'Query deploy logs of all revisions' },
  ] as const;
  for (const form of postForms) {
    app.post(
      form.path,
      {
        schema: {
          operationId: form.operationId,
          summary: form.summary,
          description: "The path's project id is the deployment id. The body may be absent; `order` defaults to desc.",
          tags,
          params: form.path.includes(':revision_id') ? RevisionParams : DeploymentParams,
          body: LogQueryBody,
          response: { 200: LogPage, ...errorResponses('deployment_not_found', 'revision_not_found') },
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
        operationId: 'getRevisionTimeline',
        summary: 'Revision timeline',
        description: 'Every status the revision went through, oldest first, with when and why.',
        tags,
        params: RevisionParams,
        response: { 200: Timeline, ...errorResponses('deployment_not_found', 'revision_not_found') },
      },
    },
    async (request) => ({
      resources: await logs.timeline(scopeOf(request), request.params.deployment_id, request.params.revision_id),
    }),
  );
};

/** The filters of either form, as the contract reads them. */
type LogFilters = Static<typeof LogQuery> | Static<typeof LogQueryBody>;

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
