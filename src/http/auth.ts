import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden, invalidField, unauthorized } from '../domain/errors.js';
import type { Principal, WorkspaceScope } from '../domain/tenancy.js';
import type { TenancyService } from '../services/tenancy.js';
import type { AuthFailureGuard } from './limits.js';

/**
 * What a route needs from the caller: `workspace` (the default) acts in one workspace,
 * `organization` needs only a valid key, `admin` needs a key with the admin role.
 */
export type Access = 'workspace' | 'organization' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    principal?: Principal;
    workspaceScope?: WorkspaceScope;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Authenticates every route of the plugin it is installed in. Runs before the body is
 * read, so an unauthenticated caller learns nothing about validation.
 */
export function installAuthentication(app: FastifyInstance, tenancy: TenancyService, guard?: AuthFailureGuard): void {
  app.addHook('onRequest', async (request, reply) => {
    try {
      guard?.check(request);
    } catch (error) {
      reply.header('retry-after', String((error as { retryAfter: number }).retryAfter));
      throw error;
    }
    const key = presentedKey(request);
    if (!key) {
      guard?.recordFailure(request);
      throw unauthorized("Missing API key: send it in the 'X-Api-Key' header or as 'Authorization: Bearer <key>'.");
    }
    const principal = await tenancy.authenticate(key);
    if (!principal) {
      guard?.recordFailure(request);
      throw unauthorized('Invalid API key.');
    }
    request.principal = principal;

    const access = request.routeOptions.config.access ?? 'workspace';
    if (access === 'admin' && principal.role !== 'admin') {
      throw forbidden('This operation requires an admin API key.');
    }
    if (access === 'workspace') {
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
  if (!UUID.test(value)) {
    throw invalidField({ type: 'uuid_parsing', loc: ['header', 'x-tenant-id'], msg: 'Input should be a valid UUID', input: value });
  }
  return value.toLowerCase();
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route reached without authentication');
  return request.principal;
}

export function scopeOf(request: FastifyRequest): WorkspaceScope {
  if (!request.workspaceScope) throw new Error('workspace route reached without a workspace');
  return request.workspaceScope;
}
