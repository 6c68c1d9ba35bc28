import { randomUUID } from 'node:crypto';
import { fail, listenerNotFound } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { type Executor, isUniqueViolation, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/listeners.js';
import type { CreatedListenerView, CreateListenerInput, ListenerView, PatchListenerInput } from '../contract/listeners.js';
import { listenerStatus } from '../domain/listener-status.js';
import { entityTag, requireIfMatch } from '../domain/entity-tags.js';
import { announceListener } from '../events/recorder.js';
import { insertListenerKey } from './tenancy.js';
import { allFieldsRead } from './all-fields-read.js';
import type { ServiceDeps } from './index.js';

export { listListenerIds } from '../store/repositories/listeners.js';

export function createListenerService({ db, bus }: ServiceDeps) {
  return {
    /** The listener and its first listener key (shown this once), in one transaction. */
    async create(scope: WorkspaceScope, input: CreateListenerInput): Promise<CreatedListenerView> {
      const { compute_type, compute_id, compute_config, version, ...unread } = input;
      allFieldsRead(unread);
      const now = nowIso();
      const record: repo.ListenerRecord = {
        id: randomUUID(),
        workspace_id: scope.workspaceId,
        compute_type,
        compute_id,
        compute_config: { k8s_namespaces: uniqueNamespaces(compute_config.k8s_namespaces) },
        version: version ?? null,
        created_at: now,
        updated_at: now,
        generation: 0,
        last_seen_at: null,
      };
      try {
        // The unique constraint decides, so two concurrent creates cannot both succeed.
        const key = await db.transaction().execute(async (trx) => {
          await repo.insertListener(trx, record);
          return insertListenerKey(trx, {
            organizationId: scope.organizationId,
            workspaceId: scope.workspaceId,
            listenerId: record.id,
            name: `listener ${compute_id}`.slice(0, 100),
          });
        });
        return { ...toView(record), listener_key: key.key };
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw fail('listener_exists', `Listener for LangSmith workspace ID '${scope.workspaceId}' and compute ID '${compute_id}' already exists.`);
        }
        throw error;
      }
    },

    async get(scope: WorkspaceScope, listenerId: string): Promise<ListenerView> {
      const id = listenerId.toLowerCase();
      const record = await repo.findListener(db, scope.workspaceId, id);
      if (!record) throw listenerNotFound(id);
      return toView(record);
    },

    async list(scope: WorkspaceScope, page: { limit: number; offset: number }): Promise<{ resources: ListenerView[]; offset: number }> {
      const records = await repo.listListeners(db, scope.workspaceId, page);
      return { resources: records.map(toView), offset: page.offset + records.length };
    },

    async update(scope: WorkspaceScope, listenerId: string, input: PatchListenerInput, ifMatch?: string): Promise<ListenerView> {
      const id = listenerId.toLowerCase();
      // The row lock (as for a delete) makes a concurrent placement on a namespace either
      // finish first and be seen below, or wait and then find the namespace gone.
      const view = await db.transaction().execute(async (trx) => {
        const current = await repo.findListener(trx, scope.workspaceId, id, 'update');
        if (!current) throw listenerNotFound(id);
        requireIfMatch(ifMatch, entityTag(toView(current)), `Listener ID ${id}`);
        const { compute_type, compute_id, version, compute_config, ...unread } = input;
        allFieldsRead(unread);
        rejectImmutableChange('compute_type', current.compute_type, compute_type);
        rejectImmutableChange('compute_id', current.compute_id, compute_id);

        const changes: repo.ListenerChanges = { updated_at: nowIso() };
        if (version != null && version !== current.version) changes.version = version;
        const namespaces = compute_config?.k8s_namespaces;
        if (namespaces != null) {
          const next = uniqueNamespaces(namespaces);
          if (!sameList(next, current.compute_config.k8s_namespaces)) {
            await rejectRemovingUsedNamespaces(trx, id, current.compute_config.k8s_namespaces, next);
            changes.compute_config = { k8s_namespaces: next };
          }
        }
        // Nothing really changes: leave updated_at alone.
        if (changes.version === undefined && changes.compute_config === undefined) return toView(current);

        if (!(await repo.updateListener(trx, scope.workspaceId, id, changes))) throw listenerNotFound(id);
        // The namespaces are in the agents' desired state.
        if (changes.compute_config) await repo.bumpGeneration(trx, id);
        const updated = await repo.findListener(trx, scope.workspaceId, id);
        if (!updated) throw listenerNotFound(id);
        return toView(updated);
      });
      announceListener(bus, id);
      return view;
    },

    async delete(scope: WorkspaceScope, listenerId: string, ifMatch?: string): Promise<void> {
      const id = listenerId.toLowerCase();
      await db.transaction().execute(async (trx) => {
        // The row lock makes a concurrent placement (which takes a share lock through
        // findListenerForPlacement) either finish first and be counted, or wait and then
        // find the listener gone.
        const current = await repo.findListener(trx, scope.workspaceId, id, 'update');
        if (!current) throw listenerNotFound(id);
        requireIfMatch(ifMatch, entityTag(toView(current)), `Listener ID ${id}`);
        const deployments = await repo.countDeploymentsOnListener(trx, id);
        if (deployments > 0) {
          const noun = deployments === 1 ? 'deployment still runs' : 'deployments still run';
          throw fail(
            'listener_in_use',
            `Listener ID ${id} cannot be deleted: ${deployments} ${noun} on it. Delete those deployments first, then delete the listener.`,
          );
        }
        await repo.deleteListener(trx, scope.workspaceId, id);
      });
    },
  };
}

/**
 * The listener a new deployment is placed on, or undefined when the workspace has no such
 * listener. Call it inside the transaction that inserts the deployment: on PostgreSQL it
 * takes a share lock, so the listener cannot be deleted before that transaction ends.
 */
export async function findListenerForPlacement(db: Executor, workspaceId: string, listenerId: string): Promise<ListenerView | undefined> {
  const record = await repo.findListener(db, workspaceId, listenerId.toLowerCase(), 'share');
  return record && toView(record);
}

/** A namespace deployments run in stays, as a listener with deployments stays (DELETE answers 409 too). */
async function rejectRemovingUsedNamespaces(db: Executor, listenerId: string, current: string[], next: string[]): Promise<void> {
  const removed = current.filter((namespace) => !next.includes(namespace));
  if (removed.length === 0) return;
  const inUse = await repo.namespacesInUse(db, listenerId);
  const stillUsed = removed.filter((namespace) => inUse.has(namespace));
  if (stillUsed.length === 0) return;
  const names = stillUsed.map((namespace) => `'${namespace}'`).join(', ');
  throw fail(
    'listener_namespace_in_use',
    `Listener ID ${listenerId} cannot stop watching namespace${stillUsed.length === 1 ? '' : 's'} ${names}: deployments still run there. ` +
      'Delete those deployments first, then remove the namespace.',
  );
}

function rejectImmutableChange(field: 'compute_type' | 'compute_id', stored: string, requested: string | null | undefined): void {
  if (requested == null || requested === stored) return;
  throw fail('field_immutable', `'${field}' cannot be changed after a listener is created (it is '${stored}'); create a new listener instead.`);
}

/** Kubernetes namespaces are a set; the first occurrence keeps its place. */
function uniqueNamespaces(namespaces: string[] | null | undefined): string[] {
  return [...new Set(namespaces ?? [])];
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

export function toView(record: repo.ListenerRecord): ListenerView {
  return {
    id: record.id,
    compute_type: record.compute_type,
    compute_id: record.compute_id,
    compute_config: { k8s_namespaces: record.compute_config.k8s_namespaces },
    version: record.version,
    created_at: record.created_at,
    updated_at: record.updated_at,
    last_seen_at: record.last_seen_at,
    status: listenerStatus(record.last_seen_at),
  };
}
