import { randomBytes, randomUUID } from 'node:crypto';
import type { SessionView } from '../contract/sessions.js';
import { fail } from '../domain/errors.js';
import { allowedRoutes } from '../domain/permissions.js';
import { mayChooseWorkspace, type Principal } from '../domain/tenancy.js';
import { hashApiKey } from '../security/api-keys.js';
import type { Db } from '../store/database.js';
import * as repo from '../store/repositories/sessions.js';
import { recordChange } from './audit.js';

/** A session as the HTTP layer keeps it for one request: what checks its CSRF token and what sign-out ends. */
export interface SessionRecord {
  id: string;
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

export interface SessionOptions {
  /** BERTH_SESSION_HOURS, in ms: how long a session lasts from sign-in. */
  ttlMs: number;
  /** Clock in milliseconds, for tests. */
  now?: () => number;
}

const secret = () => randomBytes(32).toString('base64url');

/**
 * Dashboard sessions (docs/architecture.md, "Sessions"): an API key is exchanged for a
 * random secret that the browser keeps in an HttpOnly cookie. The server keeps its digest,
 * the key it stands for, a CSRF token and when it ends; a session ends at its expiry, at
 * sign-out, or when its key is revoked.
 */
export function createSessionService(db: Db, options: SessionOptions) {
  const now = options.now ?? Date.now;
  const iso = (ms: number) => new Date(ms).toISOString();

  return {
    /** Opens a session for the key of the request; answers the cookie's secret (once) and the session. */
    async open(principal: Principal): Promise<{ secret: string; session: SessionView }> {
      // The permission table already refuses these keys; a runner or listener key never opens a session.
      if (principal.role === 'listener' || principal.role === 'runner') throw fail('listener_key_forbidden', `A ${principal.role} key cannot sign in.`);
      const value = secret();
      const at = now();
      const row: repo.SessionRow = {
        id: randomUUID(),
        secret_hash: hashApiKey(value),
        key_id: principal.keyId,
        organization_id: principal.organizationId,
        csrf_token: secret(),
        created_at: iso(at),
        expires_at: iso(at + options.ttlMs),
        revoked_at: null,
      };
      await db.transaction().execute(async (trx) => {
        // Ended sessions authenticate no one; removing them here keeps the table to the live ones.
        await repo.deleteSessionsEndedBefore(trx, iso(at));
        await repo.insertSession(trx, row);
        await recordChange(trx, ofKey(principal), { action: 'session.create', target: { type: 'session', id: row.id, name: principal.keyName } });
      });
      return { secret: value, session: view(principal, toRecord(row)) };
    },

    /** The principal and session of a cookie's secret, or null when it names no live session of a live key. */
    async authenticate(presented: string): Promise<{ principal: Principal; session: SessionRecord } | null> {
      const found = await repo.findLiveSession(db, hashApiKey(presented), iso(now()));
      if (!found) return null;
      const { session, key } = found;
      return {
        principal: {
          keyId: key.id,
          keyName: key.name,
          organizationId: key.organization_id,
          boundWorkspaceId: key.workspace_id,
          role: key.role,
          listenerId: key.listener_id,
          deploymentIds: key.deployment_ids,
        },
        session: toRecord(session),
      };
    },

    /** The session a request came with, as the API shows it; 404 for a request made with a key. */
    current(principal: Principal, session: SessionRecord | undefined): SessionView {
      if (!session) throw noSession();
      return view(principal, session);
    },

    /** Sign-out: the session authenticates no one from now on. */
    async close(principal: Principal, session: SessionRecord | undefined): Promise<void> {
      if (!session) throw noSession();
      await db.transaction().execute(async (trx) => {
        if (!(await repo.revokeSession(trx, session.id, iso(now())))) throw noSession();
        await recordChange(trx, ofKey(principal), { action: 'session.revoke', target: { type: 'session', id: session.id, name: principal.keyName } });
      });
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;

/** A session is its key's: its audit rows go to the key's workspace (the organization's, for keys bound to none). */
const ofKey = (principal: Principal) => ({ ...principal, ...(principal.boundWorkspaceId ? { workspaceId: principal.boundWorkspaceId } : {}) });

const noSession = () => fail('session_not_found', 'This request carries no session: sign in with POST /v1/sessions and send its cookie.');

function toRecord(row: repo.SessionRow): SessionRecord {
  return { id: row.id, csrfToken: row.csrf_token, createdAt: row.created_at, expiresAt: row.expires_at };
}

function view(principal: Principal, session: SessionRecord): SessionView {
  // The permission table refuses these keys first; this tells the view's type so.
  if (principal.role === 'listener' || principal.role === 'runner') throw fail('listener_key_forbidden', `A ${principal.role} key cannot sign in.`);
  return {
    id: session.id,
    created_at: session.createdAt,
    expires_at: session.expiresAt,
    csrf_token: session.csrfToken,
    key: { id: principal.keyId, name: principal.keyName, role: principal.role },
    organization_id: principal.organizationId,
    workspace_id: principal.boundWorkspaceId,
    can_switch_workspace: mayChooseWorkspace(principal),
    allowed: allowedRoutes(principal),
    deployment_ids: [...principal.deploymentIds],
  };
}
