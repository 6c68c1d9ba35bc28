import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import secureJson from 'secure-json-parse';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { type DomainError, invalidField } from '../domain/errors.js';
import type { Services } from '../services/index.js';
import { installAuthentication } from './auth.js';
import { clientErrorHandler, frameworkErrors, JsonBodyError, installErrorHandling } from './errors.js';
import { AuthFailureGuard, DEFAULT_LIMITS, installRateLimit, type RequestLimits } from './limits.js';
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
    frameworkErrors,
    clientErrorHandler,
    // Never redirect: clients refuse redirects because following one would leak the key.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  installValidation(app);
  installJsonParser(app);
  installNulGuard(app);
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
  const guard = limits.rateLimitPerMinute > 0 ? new AuthFailureGuard(limits.rateLimitPerMinute) : undefined;
  const api = async (scope: FastifyInstance) => {
    installAuthentication(scope, services.tenancy, guard);
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
    let value: unknown;
    try {
      // Rejects `__proto__` and `constructor.prototype` keys (prototype poisoning).
      value = secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' });
    } catch (error) {
      // The parser's own message may quote part of the body (a secret, say), so only a
      // fixed reason and the position go back.
      const message = error instanceof Error ? error.message : '';
      const position = Number(/position (\d+)/.exec(message)?.[1] ?? 0);
      const reason = /end of JSON input/.test(message) ? 'Unexpected end of JSON input' : 'Invalid JSON';
      return done(new JsonBodyError(position, reason), undefined);
    }
    const problem = unstorableJson(value);
    done(problem, problem ? undefined : value);
  });
}

/** Deeper than any request of this API; recursion over deeper values would exhaust the stack. */
const MAX_JSON_DEPTH = 64;

/**
 * What no route can accept, found without recursion: nesting beyond MAX_JSON_DEPTH, and
 * NUL characters, which PostgreSQL cannot store in text (SQLite could, so both reject).
 */
function unstorableJson(root: unknown): DomainError | null {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: root, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: (string | number)[] };
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return invalidField({ type: 'string_nul', loc: ['body', ...path], msg: 'Text must not contain NUL characters', input: '[redacted]' });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      return invalidField({ type: 'json_invalid', loc: ['body', ...path.slice(0, 3)], msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, input: '{…}' });
    }
    const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
    for (const [key, inner] of entries) {
      if (typeof key === 'string' && key.includes('\u0000')) return invalidField({ type: 'string_nul', loc: ['body', ...path], msg: 'Keys must not contain NUL characters', input: '[redacted]' });
      stack.push({ value: inner, path: [...path, key] });
    }
  }
  return null;
}

/** Query and path values with a NUL character: rejected for the same reason as in bodies. */
function installNulGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    for (const [part, values] of [
      ['query', request.query],
      ['path', request.params],
    ] as const) {
      for (const [name, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
        if (typeof value === 'string' && value.includes('\u0000')) {
          throw invalidField({ type: 'string_nul', loc: [part, name], msg: 'Text must not contain NUL characters', input: '[redacted]' });
        }
      }
    }
  });
}
