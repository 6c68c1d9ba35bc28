import { randomUUID } from 'node:crypto';
import type { AuditChange } from '../../domain/audit.js';
import { type Executor, nowIso } from '../database.js';
import type { Database } from '../schema.js';

/** A row as the API shows it: names decoded from JSON. */
export type AuditRecord = Omit<Database['audit_log'], 'changed_fields' | 'secret_names'> & { changed_fields: string[]; secret_names: string[] };

/** Written with the executor of the change's own transaction, so the row and the change commit together. */
export async function insertAuditRow(db: Executor, change: AuditChange): Promise<void> {
  const actor = change.actor;
  await db
    .insertInto('audit_log')
    .values({
      id: randomUUID(),
      organization_id: change.organizationId,
      workspace_id: change.workspaceId,
      created_at: nowIso(),
      actor_type: actor.type,
      actor_key_id: actor.type === 'api_key' ? actor.keyId : null,
      actor_key_name: actor.type === 'api_key' ? actor.keyName : null,
      actor_role: actor.type === 'api_key' ? actor.role : null,
      client_address: actor.type === 'api_key' ? actor.clientAddress : null,
      request_id: actor.type === 'api_key' ? actor.requestId : null,
      action: change.action,
      target_type: change.target.type,
      target_id: change.target.id,
      target_name: change.target.name,
      outcome: 'success',
      changed_fields: JSON.stringify([...(change.changedFields ?? [])]),
      secret_names: JSON.stringify([...(change.secretNames ?? [])]),
    })
    .execute();
}

export interface AuditFilters {
  actorKeyId?: string;
  action?: string;
  targetType?: string;
  targetId?: string;
  since?: string;
  until?: string;
}

/**
 * Rows of one workspace, newest first; with `withOrganization`, also the organization's
 * own rows (keys, workspaces, OAuth providers), which belong to no workspace.
 */
export async function listAuditRows(
  db: Executor,
  scope: { organizationId: string; workspaceId: string; withOrganization: boolean },
  filters: AuditFilters,
  page: { limit: number; offset: number },
): Promise<AuditRecord[]> {
  let query = db
    .selectFrom('audit_log')
    .selectAll()
    .where('organization_id', '=', scope.organizationId)
    .where((eb) =>
      scope.withOrganization ? eb.or([eb('workspace_id', '=', scope.workspaceId), eb('workspace_id', 'is', null)]) : eb('workspace_id', '=', scope.workspaceId),
    );
  if (filters.actorKeyId) query = query.where('actor_key_id', '=', filters.actorKeyId);
  if (filters.action) query = query.where('action', '=', filters.action);
  if (filters.targetType) query = query.where('target_type', '=', filters.targetType);
  if (filters.targetId) query = query.where('target_id', '=', filters.targetId);
  if (filters.since) query = query.where('created_at', '>=', filters.since);
  if (filters.until) query = query.where('created_at', '<', filters.until);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  return rows.map((row) => ({ ...row, changed_fields: JSON.parse(row.changed_fields) as string[], secret_names: JSON.parse(row.secret_names) as string[] }));
}

/** Retention: removes rows older than `before`; answers how many. */
export async function deleteAuditRowsBefore(db: Executor, before: string): Promise<number> {
  const result = await db.deleteFrom('audit_log').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
