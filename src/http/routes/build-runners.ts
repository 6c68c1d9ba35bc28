import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  ArchiveQuery,
  ClaimBody,
  ClaimResult,
  HeartbeatResult,
  InputsAnswer,
  InputsBody,
  JobParams,
  JobSource,
  LeaseBody,
  LogsBody,
  LogsResult,
  ResultBody,
  ResultOutcome,
  RUNNER_PREFIX,
} from '../../contract/build-runners.js';
import { errorResponses } from '../../contract/errors.js';
import { fail } from '../../domain/errors.js';
import type { Services } from '../../services/index.js';
import { principalOf, watchKey } from '../auth.js';
import { publicBaseUrl } from '../public-url.js';

const tags = ['build-runners'];
const config = { access: 'organization' as const };
const JOB_ERRORS = ['build_job_not_found', 'build_lease_lost'] as const;
/** Bytes, not JSON: typed loosely so the reply may be the file's stream (for OpenAPI it is described all the same). */
const ARCHIVE_ANSWER: object = { description: 'The archive', content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } } };

/**
 * The build runner protocol (docs/build-runners.md): `berth builder` processes claim build
 * jobs, fetch their source, send log lines and report the image or the failure. Only runner
 * keys reach it (domain/permissions.ts).
 */
export const buildRunnerRoutes: FastifyPluginAsyncTypebox<{ services: Services; publicUrl: string | undefined }> = async (app, { services, publicUrl }) => {
  const { buildRunners } = services;
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());

  app.post(
    `${RUNNER_PREFIX}/jobs/claim`,
    {
      config,
      schema: {
        operationId: 'claimBuildJob',
        summary: 'Claim a build job',
        description: 'Claims the oldest build job this runner’s labels satisfy, waiting up to `wait` seconds for one. `job` is null when none came.',
        tags,
        body: ClaimBody,
        response: { 200: ClaimResult, ...errorResponses() },
      },
    },
    async (request, reply) => {
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const key = watchKey(request, services.tenancy);
      try {
        const answer = await buildRunners.claim(principalOf(request), request.body, AbortSignal.any([gone.signal, key.signal, closing.signal]));
        if (key.signal.aborted) throw fail('api_key_invalid', 'Invalid API key: it was revoked while the request waited.');
        return answer;
      } finally {
        key.stop();
      }
    },
  );

  app.post(
    `${RUNNER_PREFIX}/jobs/:job_id/heartbeat`,
    {
      config,
      schema: {
        operationId: 'heartbeatBuildJob',
        summary: 'Extend a build job’s lease',
        description: 'Extends the lease; `action: cancel` says the build is no longer wanted (interrupted or timed out).',
        tags,
        params: JobParams,
        body: LeaseBody,
        response: { 200: HeartbeatResult, ...errorResponses(...JOB_ERRORS) },
      },
    },
    async (request) => buildRunners.heartbeat(principalOf(request), request.params.job_id, request.body.lease_token),
  );

  app.get(
    `${RUNNER_PREFIX}/jobs/:job_id/source`,
    {
      config,
      schema: {
        operationId: 'getBuildJobSource',
        summary: 'Where a build job’s source is',
        description:
          'The repository, the ref and the credentials to fetch it with, or a short-lived URL to download the uploaded archive from; for the holder of the lease only.',
        tags,
        params: JobParams,
        querystring: LeaseBody,
        response: { 200: JobSource, ...errorResponses(...JOB_ERRORS) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return buildRunners.source(principalOf(request), request.params.job_id, request.query.lease_token, publicBaseUrl(request, publicUrl));
    },
  );

  app.get(
    `${RUNNER_PREFIX}/jobs/:job_id/archive`,
    {
      config,
      schema: {
        operationId: 'getBuildJobArchive',
        summary: 'Download a build job’s uploaded archive',
        description:
          'The `url` of an `archive` source: the project as uploaded (`.tar.gz`), for the runner key holding the claim the URL was signed for, ' +
          'until the URL expires. Hostile content: unpack it safely.',
        tags,
        params: JobParams,
        querystring: ArchiveQuery,
        response: {
          200: ARCHIVE_ANSWER,
          ...errorResponses(...JOB_ERRORS, 'build_archive_url_invalid', 'upload_url_gone'),
        },
      },
    },
    async (request, reply) => {
      const { stream, bytes } = await buildRunners.archive(principalOf(request), request.params.job_id, request.query.token);
      reply.header('cache-control', 'no-store').header('content-length', bytes).type('application/gzip');
      return reply.send(stream);
    },
  );

  app.post(
    `${RUNNER_PREFIX}/jobs/:job_id/logs`,
    {
      config,
      schema: {
        operationId: 'sendBuildJobLogs',
        summary: 'Send a batch of build log lines',
        description: 'Batches are numbered from 0 per claim; a batch sent again with its number is stored once.',
        tags,
        params: JobParams,
        body: LogsBody,
        response: { 200: LogsResult, ...errorResponses(...JOB_ERRORS) },
      },
    },
    async (request) => buildRunners.logs(principalOf(request), request.params.job_id, request.body),
  );

  app.post(
    `${RUNNER_PREFIX}/jobs/:job_id/inputs`,
    {
      config,
      schema: {
        operationId: 'reportBuildJobInputs',
        summary: 'Report what a build would be made from',
        description:
          'Before building, the inputs the runner worked out from the fetched source. `reused`: an image of the workspace built from the same inputs serves ' +
          'the revision and the job is over; `build`: build it.',
        tags,
        params: JobParams,
        body: InputsBody,
        response: { 200: InputsAnswer, ...errorResponses(...JOB_ERRORS, 'bad_request') },
      },
    },
    async (request) => buildRunners.inputs(principalOf(request), request.params.job_id, request.body),
  );

  app.post(
    `${RUNNER_PREFIX}/jobs/:job_id/result`,
    {
      config,
      schema: {
        operationId: 'reportBuildJobResult',
        summary: 'Report how a build ended',
        description: 'The image pushed (with its digest), or the failure. Retrying a report that was taken answers `unchanged`.',
        tags,
        params: JobParams,
        body: ResultBody,
        response: { 200: ResultOutcome, ...errorResponses(...JOB_ERRORS, 'bad_request') },
      },
    },
    async (request) => buildRunners.result(principalOf(request), request.params.job_id, request.body),
  );
};
