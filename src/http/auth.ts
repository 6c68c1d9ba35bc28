import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withErrorCodes } from '../contract/errors.js';
import { type ErrorCode, fail, invalidField } from '../domain/errors.js';
import type { Principal, WorkspaceScope } from '../domain/tenancy.js';
import type { TenancyService } from '../services/tenancy.js';
import type { SessionRecord, SessionService } from '../services/sessions.js';
import { CSRF_HEADER, SESSION_COOKIE } from '../contract/sessions.js';
import type { AuthFailureGuard } from './limits.js';
import { isUuid } from '../domain/ids.js';
import { PERMISSIONS, type Permission, refusal, refusalCodes, refusedFields, routeKey } from '../domain/permissions.js';
import { SELF_HOSTED_PREFIX } from './prefix.js';

/**
 * Where a route acts: `workspace` (the default) in one workspace, `organization` needs
 * only a valid key, `listener` is the listener protocol. `admin` and `workspace-admin` are
 * `organization` and `workspace` routes of organization administration. Which roles may
 * call a route is not decided here but by the permission table (domain/permissions.ts).
 */
export type Access = 'workspace' | 'organization' | 'admin' | 'workspace-admin' | 'listener';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    principal?: Principal;
    workspaceScope?: WorkspaceScope;
    /** The dashboard session the request authenticated with, when it sent a cookie instead of a key. */
    session?: SessionRecord;
  }
}

const resolvesWorkspace = (access: Access) => access === 'workspace' || access === 'workspace-admin';

/**
 * What authentication answers, by the access a route needs and its permission: documented on
 * every route. With them `secrets_unreadable` (503): every authenticated route reads records
 * that hold encrypted values, and a server started with another encryption key cannot open them.
 */
function authErrors(access: Access, permission: Permission): ErrorCode[] {
  const workspace: ErrorCode[] = resolvesWorkspace(access) ? ['workspace_required', 'workspace_forbidden'] : [];
  return ['api_key_missing', 'api_key_invalid', 'session_invalid', 'csrf_token_invalid', ...refusalCodes(permission), ...workspace, 'secrets_unreadable'];
}

/** The permission table's entry for a route as registered (either copy, root or prefixed). */
function permissionOf(method: string, url: string): Permission | undefined {
  const path = url.startsWith(`${SELF_HOSTED_PREFIX}/`) ? url.slice(SELF_HOSTED_PREFIX.length) : url;
  return PERMISSIONS.get(routeKey(method, path));
}

/**
 * Authenticates every route of the plugin it is installed in, and authorizes it by the
 * permission table: a route missing from the table stops the server at startup. Runs
 * before the body is read, so an unauthenticated or unauthorized caller learns nothing
 * about validation.
 */
export function installAuthentication(app: FastifyInstance, tenancy: TenancyService, sessions: SessionService, guard?: AuthFailureGuard): void {
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      const permission = permissionOf(method, route.url);
      if (!permission) throw new Error(`${method} ${route.url} is missing from the permission table (src/domain/permissions.ts)`);
      if (route.schema)
        route.schema = {
          ...route.schema,
          response: withErrorCodes(route.schema.response as never, authErrors(route.config?.access ?? 'workspace', permission)),
        };
    }
  });
  app.addHook('onRequest', async (request) => {
    const key = presentedKey(request);
    const cookie = key ? undefined : request.cookies[SESSION_COOKIE];
    // A session's secret is 256 random bits like a generated key: guessing it is no threat the budget must stop.
    if (!cookie) guard?.admit(request, key);
    let principal: Principal | null;
    if (cookie) {
      const found = await sessions.authenticate(cookie);
      if (!found) throw fail('session_invalid', 'Your session has ended (signed out, expired, or its API key was revoked): sign in again.');
      requireCsrfToken(request, found.session);
      principal = found.principal;
      request.session = found.session;
    } else {
      if (!key) {
        throw (
          guard?.recordFailure(request) ?? fail('api_key_missing', "Missing API key: send it in the 'X-Api-Key' header or as 'Authorization: Bearer <key>'.")
        );
      }
      principal = await tenancy.authenticate(key);
      if (!principal) throw guard?.recordFailure(request) ?? fail('api_key_invalid', 'Invalid API key.');
      guard?.recordSuccess(key);
    }
    request.principal = { ...principal, origin: { clientAddress: request.ip, requestId: request.id } };

    const refused = refusal(permissionOfRequest(request), request.principal, deploymentIdOf(request));
    if (refused) throw fail(refused.code, refused.message);
    const access = request.routeOptions.config.access ?? 'workspace';
    if (access === 'listener') {
      // A listener key whose listener is gone speaks for no one.
      if (principal.listenerId === null) throw fail('listener_key_required', 'This listener key speaks for no listener.');
      return;
    }
    if (resolvesWorkspace(access)) {
      request.workspaceScope = await tenancy.resolveWorkspace(request.principal, tenantHeader(request));
    }
  });
  // Fields a deployer key may not send are in the body, known only once it is read.
  app.addHook('preHandler', async (request) => {
    const principal = principalOf(request);
    const fields = refusedFields(permissionOfRequest(request), principal, request.body);
    if (fields.length > 0) {
      throw fail('role_forbids', `A deployer API key may not change secrets or configuration: leave out ${fields.map((field) => `'${field}'`).join(', ')}.`);
    }
  });
}

/**
 * Writes made with a session cookie carry the session's CSRF token in `X-CSRF-Token`: a
 * page of another site can make the browser send the cookie, but cannot read the token.
 */
function requireCsrfToken(request: FastifyRequest, session: SessionRecord): void {
  if (request.method === 'GET' || request.method === 'HEAD') return;
  const header = request.headers[CSRF_HEADER];
  const sent = Buffer.from((Array.isArray(header) ? header[0] : header) ?? '');
  const expected = Buffer.from(session.csrfToken);
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
    throw fail(
      'csrf_token_invalid',
      "A write made with a session cookie needs the session's CSRF token in the 'X-CSRF-Token' header (GET /v1/sessions/current).",
    );
  }
}

function permissionOfRequest(request: FastifyRequest): Permission {
  const permission = permissionOf(request.method, request.routeOptions.url ?? '');
  if (!permission) throw new Error(`${request.method} ${request.routeOptions.url} reached without a permission`);
  return permission;
}

function deploymentIdOf(request: FastifyRequest): string | undefined {
  const id = (request.params as Record<string, unknown> | undefined)?.deployment_id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * `X-Api-Key` wins; `Authorization: Bearer` is accepted because some clients send the key
 * that way. The rate limiter reads the key with this same function, so it counts exactly
 * the key that authentication uses.
 */
export function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers['x-api-key'];
  const apiKey = (Array.isArray(header) ? header[0] : header)?.trim();
  if (apiKey) return apiKey;
  const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
  return match?.[1]?.trim() || undefined;
}

function tenantHeader(request: FastifyRequest): string | undefined {
  const header = request.headers['x-tenant-id'];
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (!isUuid(value)) {
    throw invalidField({ type: 'uuid_parsing', loc: ['header', 'x-tenant-id'], msg: 'Input should be a valid UUID', input: value });
  }
  return value.toLowerCase();
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route reached without authentication');
  return request.principal;
}

/** The listener a listener-protocol request speaks for. */
export function listenerOf(request: FastifyRequest): { listenerId: string; workspaceId: string } {
  const principal = principalOf(request);
  if (principal.role !== 'listener' || principal.listenerId === null || principal.boundWorkspaceId === null) {
    throw new Error('listener route reached without a listener key');
  }
  return { listenerId: principal.listenerId, workspaceId: principal.boundWorkspaceId };
}

export function scopeOf(request: FastifyRequest): WorkspaceScope {
  if (!request.workspaceScope) throw new Error('workspace route reached without a workspace');
  return request.workspaceScope;
}

/**
 * Watches the key a request authenticated with, for requests that outlast it: `signal`
 * aborts once the key is revoked (tenancy's key watches: at once on this process, within
 * KEY_RECHECK_MS on others). Call `stop` when the request ends.
 */
export function watchKey(request: FastifyRequest, tenancy: TenancyService): { signal: AbortSignal; stop(): void } {
  return tenancy.watchKey(principalOf(request).keyId);
}
