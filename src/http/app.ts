import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ErrorBody } from '../contract/errors.js';
import { SESSION_COOKIE } from '../contract/sessions.js';
import cookie from '@fastify/cookie';
import { withNamedSchemas } from './openapi.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Registry } from '../registry/setup.js';
import { type HttpMetricsOptions, installMetrics } from '../observability/http-metrics.js';
import type { Services } from '../services/index.js';
import { installAuthentication } from './auth.js';
import { installIdempotency } from './idempotency.js';
import { installSecretRedaction } from './secret-values.js';
import { SELF_HOSTED_PREFIX } from './prefix.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from './errors.js';
import { installJsonParser } from './json-body.js';
import { DEFAULT_LIMITS, type RequestLimits } from '../config.js';
import { AuthFailureGuard, installRateLimit } from './limits.js';
import { BodyGate } from './body-gate.js';
import { adminRoutes } from './routes/admin.js';
import { auditRoutes } from './routes/audit.js';
import { sessionRoutes } from './routes/sessions.js';
import { webhookSubscriptionRoutes } from './routes/webhook-subscriptions.js';
import { deploymentRoutes } from './routes/deployments.js';
import { eventRoutes } from './routes/events.js';
import { workspaceEventRoutes } from './routes/workspace-events.js';
import { healthRoutes } from './routes/health.js';
import { integrationRoutes } from './routes/integrations.js';
import { listenerProtocolRoutes } from './routes/listener-protocol.js';
import { buildRunnerRoutes } from './routes/build-runners.js';
import { runnerLabelRoutes } from './routes/runner-labels.js';
import { listenerRoutes } from './routes/listeners.js';
import { logRoutes } from './routes/logs.js';
import { oauthProviderRoutes } from './routes/oauth-providers.js';
import { registryRoutes } from './routes/registry.js';
import { revisionRoutes } from './routes/revisions.js';
import { buildSourceRoutes, uploadRoutes } from './routes/uploads.js';
import { webhookRoutes } from './routes/webhooks.js';
import { installWireValueParsing } from './wire-values.js';
import { installConnectionShutdown } from './shutdown.js';
import { lazyRequestLogger } from './request-logger.js';
import { installWriteDeadline } from './write-deadline.js';
import { isUuid } from '../domain/ids.js';
import { installCompiledSchemas } from './compiled-schemas.js';
import { installDashboard } from './dashboard.js';

export interface AppOptions {
  services: Services;
  logger: FastifyBaseLogger;
  limits?: RequestLimits;
  /** BERTH_PUBLIC_URL: Berth's address as clients reach it, for links it hands out. */
  publicUrl?: string;
  /** Berth's image registry, whose token realm this server serves. */
  registry?: Registry;
  metrics?: HttpMetricsOptions;
  /** Where the built dashboard is (default: dist/dashboard). */
  dashboardDir?: string;
}

export async function buildApp({
  services,
  logger,
  limits = DEFAULT_LIMITS,
  publicUrl,
  registry,
  metrics,
  dashboardDir,
}: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: limits.bodyLimitBytes,
    requestTimeout: limits.requestTimeoutMs,
    // Node arms the request timeout only when the server is constructed with it, and checks
    // it on an interval (30 s by default): both must be given here for the limit to hold.
    http: { requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: Math.min(1000, limits.requestTimeoutMs) },
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && /^[\w.:-]{1,100}$/.test(incoming) ? incoming : randomUUID();
    },
    childLoggerFactory: lazyRequestLogger,
    frameworkErrors,
    clientErrorHandler,
    // Behind a trusted proxy, request.ip is the client it names in X-Forwarded-For, so the
    // per-address limits tell apart the clients behind one proxy.
    trustProxy: limits.trustedProxies.length > 0 ? limits.trustedProxies : false,
    // Never redirect: clients refuse redirects because following one would leak the key.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  installCompiledSchemas(app);
  installJsonParser(app);
  installWireValueParsing(app);
  installErrorHandling(app, services.database.unavailable);
  await installRateLimit(app, limits.rateLimitPerMinute);
  installWriteDeadline(app, limits.responseWriteTimeoutMs);
  installMetrics(app, metrics);
  installConnectionShutdown(app);
  await app.register(cookie);
  // Ids are stored in lower case; a path id in upper case names the same resource.
  app.addHook('preHandler', async (request) => {
    const params = request.params as Record<string, unknown> | undefined;
    for (const [name, value] of Object.entries(params ?? {})) {
      if (typeof value === 'string' && isUuid(value)) params![name] = value.toLowerCase();
    }
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Berth Deployment Control Plane API',
        version: '0.1.0',
        description: 'Deployments of agent servers, their revisions, listeners and OAuth providers. Every path is also served under `/api-host`.',
      },
      components: {
        securitySchemes: {
          APIKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
          TenantID: { type: 'apiKey', in: 'header', name: 'X-Tenant-Id' },
          BearerAuth: { type: 'http', scheme: 'bearer' },
          SessionCookie: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE },
        },
      },
      security: [
        { APIKey: [], TenantID: [] },
        { BearerAuth: [], TenantID: [] },
        { SessionCookie: [], TenantID: [] },
      ],
    },
    transformObject: (documents) => withNamedSchemas('openapiObject' in documents ? documents.openapiObject : documents.swaggerObject, ErrorBody),
  });
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith(SELF_HOSTED_PREFIX)) route.schema = { ...route.schema, hide: true };
  });
  // Each copy in a scope of its own: the plugin decorates the instance it is registered on.
  for (const prefix of ['', SELF_HOSTED_PREFIX]) {
    await app.register(async (scope) => scope.register(swaggerUi, { routePrefix: `${prefix}/docs` }));
  }
  for (const prefix of ['', SELF_HOSTED_PREFIX]) {
    app.get(`${prefix}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
  }

  await app.register(healthRoutes);
  await app.register(healthRoutes, { prefix: SELF_HOSTED_PREFIX });
  const guard = limits.rateLimitPerMinute > 0 ? new AuthFailureGuard(limits.rateLimitPerMinute) : undefined;
  const api = async (scope: FastifyInstance) => {
    installAuthentication(scope, services.tenancy, services.sessions, guard);
    installSecretRedaction(scope);
    installIdempotency(scope, services.idempotency);
    await scope.register(deploymentRoutes, { services });
    await scope.register(revisionRoutes, { services });
    await scope.register(logRoutes, { services });
    await scope.register(eventRoutes, { services, writeTimeoutMs: limits.responseWriteTimeoutMs });
    await scope.register(workspaceEventRoutes, { services, writeTimeoutMs: limits.responseWriteTimeoutMs });
    await scope.register(listenerRoutes, { services });
    await scope.register(listenerProtocolRoutes, { services });
    await scope.register(buildRunnerRoutes, { services, publicUrl });
    await scope.register(runnerLabelRoutes, { services });
    await scope.register(oauthProviderRoutes, { services });
    await scope.register(adminRoutes, { services });
    await scope.register(auditRoutes, { services });
    await scope.register(sessionRoutes, { services });
    await scope.register(webhookSubscriptionRoutes, { services });
    await scope.register(integrationRoutes, { services, publicUrl });
    await scope.register(buildSourceRoutes, { services, publicUrl });
  };
  await app.register(api);
  await app.register(api, { prefix: SELF_HOSTED_PREFIX });
  const webhooks = { services, gate: new BodyGate(limits.webhookConcurrentBodies), bodyLimitBytes: limits.webhookBodyLimitBytes };
  await app.register(webhookRoutes, webhooks);
  await app.register(webhookRoutes, { ...webhooks, prefix: SELF_HOSTED_PREFIX });
  await app.register(uploadRoutes, { services });
  await app.register(uploadRoutes, { services, prefix: SELF_HOSTED_PREFIX });
  await installDashboard(app, dashboardDir);
  if (registry) {
    await app.register(registryRoutes, { registry });
    await app.register(registryRoutes, { registry, prefix: SELF_HOSTED_PREFIX });
  }
  return app;
}
