import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { MAX_UPLOAD_BYTES } from '../../sources/uploads.js';
import { PushToken, UploadQuery, UploadReceipt, UploadUrl } from '../../contract/builds.js';
import { DeploymentParams } from '../../contract/deployments.js';
import { errorResponses } from '../../contract/errors.js';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';
import { publicBaseUrl } from '../public-url.js';

const tags = ['builds'];

/** `POST …/upload-url` and `POST …/push-token`: authenticated like every deployment route. */
export const buildSourceRoutes: FastifyPluginAsyncTypebox<{ services: Services; publicUrl: string | undefined }> = async (app, { services, publicUrl }) => {
  app.post(
    '/v2/deployments/:deployment_id/upload-url',
    {
      config: { idempotent: true },
      schema: {
        operationId: 'createUploadUrl',
        summary: 'Get a URL to upload the project to',
        description:
          '`internal_source` deployments (`langgraph deploy --remote`): PUT the project as a .tar.gz (`Content-Type: application/gzip`, up to ' +
          '200 MB) to `upload_url` within 15 minutes, once, without an API key; then PATCH the deployment with ' +
          '`source_revision_config.source_tarball_path` = `object_path`.',
        tags,
        params: DeploymentParams,
        response: { 200: UploadUrl, ...errorResponses('deployment_not_found', 'upload_not_available', 'deployment_deleting') },
      },
    },
    async (request: FastifyRequest<{ Params: { deployment_id: string } }>) =>
      services.uploads.issueUrl(scopeOf(request), request.params.deployment_id, publicBaseUrl(request, publicUrl)),
  );

  app.post(
    '/v2/deployments/:deployment_id/push-token',
    {
      schema: {
        operationId: 'createPushToken',
        summary: 'Get a token to push an image with',
        description:
          '`internal_docker` deployments (`langgraph deploy` with a local build): `docker login -u oauth2accesstoken --password-stdin` to the host ' +
          "of `registry_url` with `token`, push `<registry_url>/<name>:<tag>`, then PATCH the deployment with the pushed image's digest. " +
          'The token expires within an hour and may push only below `registry_url`.',
        tags,
        params: DeploymentParams,
        response: { 200: PushToken, ...errorResponses('deployment_not_found', 'push_token_not_available', 'registry_not_configured') },
      },
    },
    async (request: FastifyRequest<{ Params: { deployment_id: string } }>) => services.pushTokens.issue(scopeOf(request), request.params.deployment_id),
  );
};

/**
 * The upload itself: no API key (the CLI sends none), the signed token in the query is the
 * authorisation. The body is never parsed or buffered: it streams to the data directory.
 */
export const uploadRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.put(
    '/v2/uploads/:deployment_id',
    {
      bodyLimit: MAX_UPLOAD_BYTES,
      schema: {
        operationId: 'uploadProjectArchive',
        summary: 'Upload a project archive',
        description:
          "The `upload_url` of POST …/upload-url. 403 for a wrong, expired, used or other deployment's token; 410 once its deployment is " +
          'deleted; 413 past 200 MB (`body_too_large`) or when the archives pending for the deployment or its workspace would pass ' +
          'their limit (`upload_quota_exceeded`, naming it), as soon as known: from Content-Length, or while counting; 400 for a body that is not gzip.',
        tags,
        security: [],
        params: DeploymentParams,
        querystring: UploadQuery,
        response: {
          200: UploadReceipt,
          ...errorResponses('upload_invalid', 'upload_token_invalid', 'upload_url_gone', 'body_too_large', 'upload_quota_exceeded'),
        },
      },
    },
    async (request, reply) => {
      const declared = request.headers['content-length'];
      const contentLength = declared === undefined ? undefined : Number(declared);
      try {
        return await services.uploads.receive(request.params.deployment_id, request.query.token, request.body as NodeJS.ReadableStream, contentLength);
      } catch (error) {
        // A refused upload's unread rest is not drained: the connection closes after the answer.
        reply.header('connection', 'close');
        throw error;
      }
    },
  );
};
