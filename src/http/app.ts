import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import secureJson from 'secure-json-parse';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Services } from '../services/index.js';
import { installAuthentication } from './auth.js';
import { JsonBodyError, installErrorHandling } from './errors.js';
import { DEFAULT_LIMITS, installRateLimit, type RequestLimits } from './limits.js';
import { adminRoutes } from './routes/admin.js';
import { deploymentRoutes } from './routes/deployments.js';
import { healthRoutes } from './routes/health.js';
import { listenerRoutes } from './routes/listeners.js';
import { logRoutes } from './routes/logs.js';
import { oauthProviderRoutes } from './routes/oauth-providers.js';
import { revisionRoutes } from './routes/revisions.js';

export interface AppOptions {
  services: Services;
  logger: FastifyBaseLogger;
  limits?: RequestLimits;
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Self-hosted clients put this prefix in their base URL; every API route is served under it too. */
export const SELF_HOSTED_PREFIX = '/api-host';

export async function buildApp({ services, logger, limits = DEFAULT_LIMITS }: AppOptions): Promise<FastifyInstance> {
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
    // Never redirect: clients refuse redirects because following one would leak the key.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  installValidation(app);
  installJsonParser(app);
  installErrorHandling(app);
  await installRateLimit(app, limits.rateLimitPerMinute);
  // Ids are stored in lower case; a path id in upper case names the same resource.
  app.addHook('preHandler', async (request) => {
    const params = request.params as Record<string, unknown> | undefined;
    for (const [name, value] of Object.entries(params ?? {})) {
      if (typeof value === 'string' && UUID_TEXT.test(value)) params![name] = value.toLowerCase();
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
        description:
          'Deployments of agent servers, their revisions, listeners and OAuth providers. Every path is also served under `/api-host`.',
      },
      components: {
        securitySchemes: {
          'API Key': { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
          'Tenant ID': { type: 'apiKey', in: 'header', name: 'X-Tenant-Id' },
          'Bearer Auth': { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ 'API Key': [], 'Tenant ID': [] }, { 'Bearer Auth': [], 'Tenant ID': [] }],
    },
  });
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith(SELF_HOSTED_PREFIX)) route.schema = { ...route.schema, hide: true };
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes);
  const api = async (scope: FastifyInstance) => {
    installAuthentication(scope, services.tenancy);
    await scope.register(deploymentRoutes, { services });
    await scope.register(revisionRoutes, { services });
    await scope.register(logRoutes, { services });
    await scope.register(listenerRoutes, { services });
    await scope.register(oauthProviderRoutes, { services });
    await scope.register(adminRoutes, { services });
  };
  await app.register(api);
  await app.register(api, { prefix: SELF_HOSTED_PREFIX });
  return app;
}

/**
 * Query, path and header values are strings on the wire, so their validator coerces
 * ("20" → 20); JSON bodies are typed already, and a wrong type there is an error.
 */
function installValidation(app: FastifyInstance): void {
  const options = { allErrors: true, allowUnionTypes: true, useDefaults: true, strict: false } as const;
  const coercing = addFormats.default(new Ajv.default({ ...options, coerceTypes: 'array' }));
  const exact = addFormats.default(new Ajv.default({ ...options, coerceTypes: false }));
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? exact : coercing).compile(schema));
}

/**
 * JSON bodies through Fastify's safe parser, except that an empty body counts as no body:
 * some clients send `Content-Type: application/json` on GET and DELETE without a body.
 * Malformed JSON becomes FastAPI's `json_invalid` 422.
 */
function installJsonParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      // Rejects `__proto__` and `constructor.prototype` keys (prototype poisoning).
      done(null, secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' }));
    } catch (error) {
      // The parser's own message may quote part of the body (a secret, say), so only a
      // fixed reason and the position go back.
      const message = error instanceof Error ? error.message : '';
      const position = Number(/position (\d+)/.exec(message)?.[1] ?? 0);
      const reason = /end of JSON input/.test(message) ? 'Unexpected end of JSON input' : 'Invalid JSON';
      done(new JsonBodyError(position, reason), undefined);
    }
  });
}
