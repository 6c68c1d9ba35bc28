import type { AuditEntryView, AuditQueryInput } from '../contract/audit.js';
import { type AuditChange, actorOf } from '../domain/audit.js';
import type { Principal, WorkspaceScope } from '../domain/tenancy.js';
import type { Db, Executor } from '../store/database.js';
import { type AuditRecord, deleteAuditRowsBefore, insertAuditRow, listAuditRows } from '../store/repositories/audit.js';
import { allFieldsRead } from './all-fields-read.js';

const DAY_MS = 86_400_000;

/**
 * Reading the audit log; rows are written by the services that make changes, in their own
 * transactions (store/repositories/audit.ts), and no API changes or removes one.
 */
export function createAuditService(db: Db) {
  return {
    /** The workspace's rows, newest first; admin keys also see the organization's own. */
    async list(scope: WorkspaceScope, query: AuditQueryInput): Promise<{ resources: AuditEntryView[]; offset: number }> {
      const { limit, offset, actor, action, target_type, target_id, since, until, ...unread } = query;
      allFieldsRead(unread);
      const rows = await listAuditRows(
        db,
        { organizationId: scope.organizationId, workspaceId: scope.workspaceId, withOrganization: scope.role === 'admin' },
        {
          actor: actor?.toLowerCase(),
          action,
          targetType: target_type,
          targetId: target_id,
          since: since && new Date(since).toISOString(),
          until: until && new Date(until).toISOString(),
        },
        { limit, offset },
      );
      return { resources: rows.map(entryView), offset: offset + rows.length };
    },

    /** Retention: removes rows older than `days` days; answers how many went. */
    prune: (days: number, now = Date.now()) => deleteAuditRowsBefore(db, new Date(now - days * DAY_MS).toISOString()),
  };
}

function entryView(row: AuditRecord): AuditEntryView {
  return {
    id: row.id,
    created_at: row.created_at,
    workspace_id: row.workspace_id,
    actor: actorView(row),
    client_address: row.client_address,
    request_id: row.request_id,
    action: row.action,
    target: { type: row.target_type, id: row.target_id, name: row.target_name },
    outcome: row.outcome,
    changed_fields: row.changed_fields,
    secret_names: row.secret_names,
  };
}

function actorView(row: AuditRecord): AuditEntryView['actor'] {
  if (row.actor_type === 'berth') return { type: 'berth', name: 'Berth itself', reason: row.actor_reason ?? '' };
  return { type: 'api_key', key_id: row.actor_key_id ?? '', key_name: row.actor_key_name ?? '', role: row.actor_role ?? '' };
}

/**
 * Records a change made through the API, with the executor of the change's transaction: the
 * row commits with the change or not at all. Names only, never values.
 */
export function recordChange(
  trx: Executor,
  principal: Principal & { workspaceId?: string },
  change: Pick<AuditChange, 'action' | 'target' | 'changedFields' | 'secretNames'>,
): Promise<void> {
  return insertAuditRow(trx, { ...change, organizationId: principal.organizationId, workspaceId: principal.workspaceId ?? null, actor: actorOf(principal) });
}
