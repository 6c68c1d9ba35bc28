import { randomUUID } from 'node:crypto';
import { deploymentNotFound, fail, invalidField, listenerNotFound } from '../domain/errors.js';
import {
  type ApiKeyRole,
  DEFAULT_ORGANIZATION,
  mayChooseWorkspace,
  DEFAULT_WORKSPACE,
  type Principal,
  type WorkspaceScope,
  workspaceName,
} from '../domain/tenancy.js';
import { digestsEqual, generateApiKey, hashApiKey, keyHint } from '../security/api-keys.js';
import { type Db, type Executor, isUniqueViolation, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/tenancy.js';
import type { ApiKeyView, CreatedApiKeyView, NewApiKey, WorkspaceView } from '../contract/admin.js';
import { allFieldsRead } from './all-fields-read.js';
import { recordChange } from './audit.js';
import { fieldsSet } from '../domain/audit.js';
import { KeyWatches } from './key-watches.js';

export type BootstrapResult = { created: false } | { created: true; organizationId: string; workspaceId: string; apiKey: string; generated: boolean };

/**
 * How long a process reuses a successful API key lookup instead of asking the database.
 * A revoked key therefore stops working at once on the process that revoked it and
 * within this time on every other server process sharing the database.
 */
export const API_KEY_CACHE_TTL_MS = 5_000;
/**
 * How often the keys of long requests (event streams, long polls) are checked for
 * revocation: a key revoked on another server ends them within this.
 */
export const KEY_RECHECK_MS = 1000;
/** Keys remembered at most (the least recently looked up go first). */
const API_KEY_CACHE_SIZE = 10_000;

export interface TenancyOptions {
  /** Overrides API_KEY_CACHE_TTL_MS; 0 turns the cache off. */
  keyCacheTtlMs?: number;
  /** Overrides KEY_RECHECK_MS. */
  keyRecheckMs?: number;
  /** Clock in milliseconds, for tests. */
  now?: () => number;
}

export function createTenancyService(db: Db, options: TenancyOptions = {}) {
  const ttlMs = options.keyCacheTtlMs ?? API_KEY_CACHE_TTL_MS;
  const now = options.now ?? Date.now;
  /** By key digest (never the key itself): the principal and when the entry expires. */
  const keyCache = new Map<string, { principal: Principal; expiresAt: number }>();
  const keyWatches = new KeyWatches((ids) => repo.existingApiKeyIds(db, ids), options.keyRecheckMs ?? KEY_RECHECK_MS);
  /** Counts revocations here, so a lookup that raced one is not cached. */
  let revocations = 0;

  return {
    /**
     * First start: an organization and workspace named `default`, and an admin key bound
     * to that workspace. Safe when several processes start at once on one database: the
     * organization name is unique, so only one of them inserts.
     */
    async bootstrap(configuredKey: string | undefined): Promise<BootstrapResult> {
      if ((await repo.countOrganizations(db)) > 0) return { created: false };
      const created = await createOrganization(db, DEFAULT_ORGANIZATION, configuredKey);
      return created ? { created: true, ...created, generated: configuredKey === undefined } : { created: false };
    },

    /**
     * An organization with one workspace named `default` and an admin key bound to it.
     * Answers null when an organization of that name exists already.
     */
    createOrganization: (name: string, apiKey?: string) => createOrganization(db, name, apiKey),

    /**
     * The principal of a key, or null for an unknown or revoked key. Successful lookups
     * are reused for API_KEY_CACHE_TTL_MS (see there); unknown keys are always looked up,
     * so a new key works at once.
     */
    async authenticate(presentedKey: string): Promise<Principal | null> {
      const digest = hashApiKey(presentedKey);
      const cached = keyCache.get(digest);
      if (cached) {
        keyCache.delete(digest);
        if (cached.expiresAt > now()) {
          keyCache.set(digest, cached);
          return { ...cached.principal };
        }
      }
      const revocationsBefore = revocations;
      const row = await repo.findApiKeyByHash(db, digest);
      if (!row || !digestsEqual(row.key_hash, digest)) return null;
      const principal: Principal = {
        keyId: row.id,
        keyName: row.name,
        organizationId: row.organization_id,
        boundWorkspaceId: row.workspace_id,
        role: row.role,
        listenerId: row.listener_id,
        deploymentIds: row.deployment_ids,
        ...(row.runner_labels ? { runnerLabels: row.runner_labels } : {}),
      };
      if (ttlMs > 0 && revocations === revocationsBefore) {
        keyCache.set(digest, { principal, expiresAt: now() + ttlMs });
        if (keyCache.size > API_KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value as string);
      }
      return { ...principal };
    },

    /**
     * The workspace a request acts in: the tenant header when given, else the key's bound
     * workspace. Admin keys and unbound keys may name any workspace of their organization
     * (admins create workspaces and must be able to work in them); member keys bound to a
     * workspace stay in it. Another organization's workspace and a workspace outside the
     * key's reach get the same answer as one that does not exist, so ids cannot be probed.
     */
    async resolveWorkspace(principal: Principal, requestedWorkspaceId: string | undefined): Promise<WorkspaceScope> {
      if (requestedWorkspaceId === undefined) {
        if (principal.boundWorkspaceId === null) {
          throw fail(
            'workspace_required',
            'This organization-scoped API key requires workspace specification: send the workspace id in the X-Tenant-Id header.',
          );
        }
        return { ...principal, workspaceId: principal.boundWorkspaceId };
      }
      const allowed =
        principal.boundWorkspaceId === requestedWorkspaceId ||
        (mayChooseWorkspace(principal) && (await repo.findWorkspace(db, principal.organizationId, requestedWorkspaceId)) !== undefined);
      if (!allowed) throw fail('workspace_forbidden', `This API key has no access to workspace '${requestedWorkspaceId}'.`);
      return { ...principal, workspaceId: requestedWorkspaceId };
    },

    async createWorkspace(principal: Principal, requestedName: string): Promise<WorkspaceView> {
      const name = workspaceName(requestedName);
      const row = { id: randomUUID(), organization_id: principal.organizationId, name, created_at: nowIso() };
      try {
        await db.transaction().execute(async (trx) => {
          await repo.insertWorkspace(trx, row);
          await recordChange(trx, principal, { action: 'workspace.create', target: { type: 'workspace', id: row.id, name }, changedFields: ['name'] });
        });
      } catch (error) {
        if (isUniqueViolation(error))
          throw fail('workspace_name_taken', `Workspace '${name}' already exists in this organization (names are compared without regard to case).`);
        throw error;
      }
      return row;
    },

    async listWorkspaces(principal: Principal): Promise<WorkspaceView[]> {
      return repo.listWorkspaces(db, principal.organizationId);
    },

    async createApiKey(principal: Principal, input: NewApiKey): Promise<CreatedApiKeyView> {
      const { name = 'api-key', workspace_id = null, role = 'member', listener_id = null, deployment_ids, labels, ...unread } = input;
      allFieldsRead(unread);
      if (listener_id !== null) {
        const listener = await repo.findListenerOfOrganization(db, principal.organizationId, listener_id.toLowerCase());
        if (!listener || (workspace_id !== null && workspace_id !== listener.workspace_id)) throw listenerNotFound(listener_id.toLowerCase());
        return db.transaction().execute(async (trx) => {
          const created = await insertListenerKey(trx, {
            organizationId: principal.organizationId,
            workspaceId: listener.workspace_id,
            listenerId: listener.id,
            name,
          });
          await recordChange(trx, principal, { action: 'api_key.create', target: { type: 'api_key', id: created.id, name }, changedFields: fieldsSet(input) });
          return created;
        });
      }
      if (workspace_id !== null && !(await repo.findWorkspace(db, principal.organizationId, workspace_id))) {
        throw fail('workspace_not_found', `Workspace ID ${workspace_id} not found.`);
      }
      const deploymentIds = deployerDeployments(role, workspace_id, deployment_ids);
      const runnerLabels = runnerKeyLabels(role, workspace_id, labels);
      if (workspace_id !== null && deploymentIds.length > 0) {
        const found = await repo.deploymentsInWorkspace(db, workspace_id, deploymentIds);
        const missing = deploymentIds.find((id) => !found.has(id));
        if (missing) throw deploymentNotFound(missing);
      }
      const key = generateApiKey();
      const row = {
        id: randomUUID(),
        organization_id: principal.organizationId,
        workspace_id,
        name,
        role,
        key_hash: hashApiKey(key),
        key_hint: keyHint(key),
        created_at: nowIso(),
        listener_id: null,
        deployment_ids: deploymentIds,
        ...(runnerLabels ? { runner_labels: runnerLabels } : {}),
      };
      await db.transaction().execute(async (trx) => {
        await repo.insertApiKey(trx, row);
        await recordChange(trx, principal, { action: 'api_key.create', target: { type: 'api_key', id: row.id, name }, changedFields: fieldsSet(input) });
      });
      return { ...toKeyView(row), key };
    },

    async listApiKeys(principal: Principal): Promise<ApiKeyView[]> {
      return (await repo.listApiKeys(db, principal.organizationId)).map(toKeyView);
    },

    async revokeApiKey(principal: Principal, keyId: string): Promise<void> {
      if (keyId === principal.keyId) throw fail('api_key_self_revoke', 'An API key cannot revoke itself; revoke it with another admin key.');
      revocations += 1;
      await db.transaction().execute(async (trx) => {
        const revoked = await repo.deleteApiKey(trx, principal.organizationId, keyId);
        if (!revoked) throw fail('api_key_not_found', `API key ID ${keyId} not found.`);
        await recordChange(trx, principal, { action: 'api_key.revoke', target: { type: 'api_key', id: keyId, name: revoked.name } });
      });
      // Other processes forget it when their entry expires (API_KEY_CACHE_TTL_MS).
      for (const [digest, entry] of keyCache) if (entry.principal.keyId === keyId) keyCache.delete(digest);
      keyWatches.revoked(keyId);
    },

    /** For requests that outlast their authentication: `signal` aborts once the key is revoked. */
    watchKey(keyId: string): { signal: AbortSignal; stop(): void } {
      return keyWatches.watch(keyId);
    },
  };
}

export type TenancyService = ReturnType<typeof createTenancyService>;

async function createOrganization(
  db: Db,
  name: string,
  apiKey: string = generateApiKey(),
): Promise<{ organizationId: string; workspaceId: string; apiKey: string } | null> {
  const now = nowIso();
  const organizationId = randomUUID();
  const workspaceId = randomUUID();
  return db.transaction().execute(async (trx) => {
    if (!(await repo.insertOrganizationIfAbsent(trx, { id: organizationId, name, created_at: now }))) return null;
    await repo.insertWorkspace(trx, { id: workspaceId, organization_id: organizationId, name: DEFAULT_WORKSPACE, created_at: now });
    await repo.insertApiKey(trx, {
      id: randomUUID(),
      organization_id: organizationId,
      workspace_id: workspaceId,
      name: 'bootstrap',
      role: 'admin',
      key_hash: hashApiKey(apiKey),
      key_hint: keyHint(apiKey),
      created_at: now,
      listener_id: null,
      deployment_ids: [],
    });
    return { organizationId, workspaceId, apiKey };
  });
}

function toKeyView(row: repo.ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    organization_id: row.organization_id,
    workspace_id: row.workspace_id,
    key_hint: row.key_hint,
    created_at: row.created_at,
    listener_id: row.listener_id,
    deployment_ids: row.deployment_ids,
    ...(row.runner_labels ? { labels: row.runner_labels } : {}),
  };
}

/** A runner key serves the whole organization (a runner builds for every workspace) and carries its labels; no other key takes labels. */
function runnerKeyLabels(role: ApiKeyRole, workspaceId: string | null, labels: string[] | undefined): string[] | undefined {
  if (role !== 'runner') {
    if (labels === undefined) return undefined;
    throw invalidField({ type: 'value_error', loc: ['body', 'labels'], msg: 'Value error, labels is only for runner keys', input: labels });
  }
  if (workspaceId !== null) {
    throw invalidField({
      type: 'value_error',
      loc: ['body', 'workspace_id'],
      msg: 'Value error, a runner key is not bound to a workspace',
      input: workspaceId,
    });
  }
  return labels ?? [];
}

/**
 * The deployments a new key is made for: a `deployer` key needs a workspace and a list of
 * its deployments (checked by the caller); every other role takes none.
 */
function deployerDeployments(role: ApiKeyRole, workspaceId: string | null, deploymentIds: string[] | undefined): string[] {
  if (role !== 'deployer') {
    if (deploymentIds === undefined) return [];
    throw invalidField({
      type: 'value_error',
      loc: ['body', 'deployment_ids'],
      msg: 'Value error, deployment_ids is only for deployer keys',
      input: deploymentIds,
    });
  }
  if (workspaceId === null) {
    throw invalidField({ type: 'missing', loc: ['body', 'workspace_id'], msg: 'Field required: a deployer key is bound to the workspace of its deployments' });
  }
  if (deploymentIds === undefined) throw invalidField({ type: 'missing', loc: ['body', 'deployment_ids'], msg: 'Field required' });
  return [...new Set(deploymentIds.map((id) => id.toLowerCase()))];
}

/**
 * A new `listener` key for one listener, bound to its workspace; inside the transaction
 * that creates the listener, or alone through the admin keys endpoint. The key is in the
 * answer once; only its digest is stored.
 */
export async function insertListenerKey(
  db: Executor,
  target: { organizationId: string; workspaceId: string; listenerId: string; name: string },
): Promise<CreatedApiKeyView> {
  const key = generateApiKey();
  const row: repo.ApiKeyRow = {
    id: randomUUID(),
    organization_id: target.organizationId,
    workspace_id: target.workspaceId,
    name: target.name,
    role: 'listener',
    key_hash: hashApiKey(key),
    key_hint: keyHint(key),
    created_at: nowIso(),
    listener_id: target.listenerId,
    deployment_ids: [],
  };
  await repo.insertApiKey(db, row);
  return { ...toKeyView(row), key };
}
