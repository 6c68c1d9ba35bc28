import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { CreateIntegrationBody, Installations, Integration, IntegrationParams, Repositories } from '../../contract/integrations.js';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';
import { publicBaseUrl } from '../public-url.js';
import { NoContent, noContent } from '../replies.js';
import { ConditionalReadHeaders, ConditionalWriteHeaders, NotModified } from '../../contract/conditional.js';
import { ifMatchOf, tagged } from '../entity-tags.js';
import { errorResponses } from '../../contract/errors.js';

const tags = ['integrations'];
const admin = { access: 'workspace-admin' as const };

/**
 * Code-host integrations of the workspace. Real clients spell the path segment `github`
 * (real-clients.md 3.22); `codehost` is the spec's neutral name. Both are served; the
 * alias is left out of the OpenAPI document.
 */
export const integrationRoutes: FastifyPluginAsyncTypebox<{ services: Services; publicUrl: string | undefined }> = async (app, { services, publicUrl }) => {
  const { integrations } = services;
  const base = (request: FastifyRequest) => publicBaseUrl(request, publicUrl);

  for (const segment of ['codehost', 'github'] as const) {
    const hide = segment === 'github';
    const root = `/v1/integrations/${segment}`;
    // The alias is hidden from the document, and operation ids must be unique in it.
    const id = (operationId: string) => (hide ? {} : { operationId });

    app.post(
      root,
      {
        config: { ...admin, idempotent: true },
        schema: {
          hide,
          ...id('createIntegration'),
          summary: 'Create a code-host integration',
          description: 'Credentials are stored encrypted and never returned.',
          tags,
          body: CreateIntegrationBody,
          response: { 201: Integration, ...errorResponses('integration_settings_invalid') },
        },
      },
      async (request, reply) => reply.code(201).send(await integrations.create(scopeOf(request), request.body, base(request))),
    );

    app.get(
      `${root}/install`,
      {
        schema: {
          hide,
          ...id('listIntegrations'),
          summary: 'List code-host integrations',
          description: 'A bare array of `{id, installation_id, name}`.',
          tags,
          response: { 200: Installations, ...errorResponses() },
        },
      },
      async (request) => integrations.installations(scopeOf(request)),
    );

    app.get(
      `${root}/:integration_id`,
      {
        config: admin,
        schema: {
          hide,
          ...id('getIntegration'),
          summary: 'Get a code-host integration',
          description: 'Answers an `ETag`; with `If-None-Match` naming it, 304 while the integration is unchanged.',
          tags,
          params: IntegrationParams,
          headers: ConditionalReadHeaders,
          response: { 200: Integration, 304: NotModified, ...errorResponses('integration_not_found') },
        },
      },
      async (request, reply) => tagged(request, reply, await integrations.get(scopeOf(request), request.params.integration_id, base(request))),
    );

    app.get(
      `${root}/:integration_id/repos`,
      {
        schema: {
          hide,
          ...id('listIntegrationRepositories'),
          summary: 'List repositories of a code-host integration',
          description:
            'A bare array. Asks the code host (each remote, for `git`) and reuses the answer for 30 s; concurrent requests share one ' +
            'call. A failing remote answers 502 naming it; a remote that does not answer in time (BERTH_GIT_TIMEOUT_SECONDS) answers 504.',
          tags,
          params: IntegrationParams,
          response: { 200: Repositories, ...errorResponses('integration_not_found', 'codehost_failed', 'codehost_timeout') },
        },
      },
      async (request) => integrations.repositories(scopeOf(request), request.params.integration_id),
    );

    app.delete(
      `${root}/:integration_id`,
      {
        config: admin,
        schema: {
          hide,
          ...id('deleteIntegration'),
          summary: 'Delete a code-host integration',
          description: 'Refused with 409 while deployments build from it. With `If-Match`, 412 (`resource_changed`) unless it names the integration.',
          tags,
          params: IntegrationParams,
          headers: ConditionalWriteHeaders,
          response: { 204: NoContent, ...errorResponses('integration_not_found', 'integration_in_use', 'resource_changed') },
        },
      },
      async (request, reply) => {
        const ifMatch = ifMatchOf(request);
        await integrations.delete(scopeOf(request), request.params.integration_id, ifMatch === undefined ? undefined : { ifMatch, webhookBase: base(request) });
        return noContent(reply);
      },
    );
  }
};
