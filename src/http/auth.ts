import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withErrorCodes } from '../contract/errors.js';
import { type ErrorCode, fail, invalidField } from '../domain/errors.js';
import type { Principal, WorkspaceScope } from '../domain/tenancy.js';
import type { TenancyService } from '../services/tenancy.js';
import type { AuthFailureGuard } from './limits.js';
import { isUuid } from '../domain/ids.js';

/**
 * What a route needs from the caller: `workspace` (the default) acts in one workspace,
 * `organization` needs only a valid key, `admin` needs a key with the admin role, and
 * `workspace-admin` an admin key acting in one workspace, and `listener` a listener key
 * (the listener protocol). A listener key reaches `listener` routes and nothing else.
 */
export type Access = 'workspace' | 'organization' | 'admin' | 'workspace-admin' | 'listener';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    principal?: Principal;
    workspaceScope?: WorkspaceScope;
  }
}

/** What authentication answers, by the access a route needs: documented on every route. */
const ACCESS_ERRORS: Record<Access, ErrorCode[]> = {
  organization: ['api_key_missing', 'api_key_invalid', 'listener_key_forbidden'],
  admin: ['api_key_missing', 'api_key_invalid', 'admin_key_required', 'listener_key_forbidden'],
  workspace: ['api_key_missing', 'api_key_invalid', 'workspace_required', 'workspace_forbidden', 'listener_key_forbidden'],
  'workspace-admin': ['api_key_missing', 'api_key_invalid', 'admin_key_required', 'workspace_required', 'workspace_forbidden', 'listener_key_forbidden'],
  listener: ['api_key_missing', 'api_key_invalid', 'listener_key_required'],
};

/**
 * Authenticates every route of the plugin it is installed in. Runs before the body is
 * read, so an unauthenticated caller learns nothing about validation.
 */
export function installAuthentication(app: FastifyInstance, tenancy: TenancyService, guard?: AuthFailureGuard): void {
  app.addHook('onRoute', (route) => {
    if (route.schema)
      route.schema = { ...route.schema, response: withErrorCodes(route.schema.response as never, ACCESS_ERRORS[route.config?.access ?? 'workspace']) };
  });
  app.addHook('onRequest', async (request) => {
    const key = presentedKey(request);
    guard?.admit(request, key);
    if (!key) {
      throw guard?.recordFailure(request) ?? fail('api_key_missing', "Missing API key: send it in the 'X-Api-Key' header or as 'Authorization: Bearer <key>'.");
    }
    const principal = await tenancy.authenticate(key);
    if (!principal) throw guard?.recordFailure(request) ?? fail('api_key_invalid', 'Invalid API key.');
    guard?.recordSuccess(key);
    request.principal = principal;

    const access = request.routeOptions.config.access ?? 'workspace';
    if (access === 'listener') {
      if (principal.role !== 'listener' || principal.listenerId === null) {
        throw fail(
          'listener_key_required',
          'The listener protocol needs a listener key (created with the listener, or with POST /v1/api-keys and listener_id).',
        );
      }
      return;
    }
    if (principal.role === 'listener') {
      throw fail('listener_key_forbidden', 'A listener key reaches only the listener protocol (/v1/listener-protocol); use an API key for this operation.');
    }
    if ((access === 'admin' || access === 'workspace-admin') && principal.role !== 'admin') {
      throw fail('admin_key_required', 'This operation requires an admin API key.');
    }
    if (access === 'workspace' || access === 'workspace-admin') {
      request.workspaceScope = await tenancy.resolveWorkspace(principal, tenantHeader(request));
    }
  });
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
