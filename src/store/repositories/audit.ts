import { randomUUID } from 'node:crypto';
import { type AuditChange, type BerthChange, REASON_MAX_LENGTH } from '../../domain/audit.js';
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
      actor_reason: actor.type === 'berth' ? actor.reason.slice(0, REASON_MAX_LENGTH) : null,
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

/**
 * Records a change Berth made on its own, with the executor of the change's transaction, in
 * the workspace of the deployment (or workspace) it changed: one INSERT … SELECT that finds
 * the organization itself, so the engine need not read it first.
 */
export async function insertBerthAuditRow(db: Executor, where: { deploymentId: string } | { workspaceId: string }, change: BerthChange): Promise<void> {
  await db
    .insertInto('audit_log')
    .columns([
      'id',
      'organization_id',
      'workspace_id',
      'created_at',
      'actor_type',
      'actor_reason',
      'action',
      'target_type',
      'target_id',
      'target_name',
      'outcome',
      'changed_fields',
      'secret_names',
    ])
    .expression((eb) => {
      const from =
        'deploymentId' in where
          ? eb.selectFrom('deployments').innerJoin('workspaces', 'workspaces.id', 'deployments.workspace_id').where('deployments.id', '=', where.deploymentId)
          : eb.selectFrom('workspaces').where('workspaces.id', '=', where.workspaceId);
      return from.select([
        eb.val(randomUUID()).as('id'),
        'workspaces.organization_id',
        'workspaces.id as workspace_id',
        eb.val(nowIso()).as('created_at'),
        eb.val('berth').as('actor_type'),
        eb.val(change.reason.slice(0, REASON_MAX_LENGTH)).as('actor_reason'),
        eb.val(change.action).as('action'),
        eb.val(change.target.type).as('target_type'),
        eb.val(change.target.id).as('target_id'),
        eb.val(change.target.name).as('target_name'),
        eb.val('success').as('outcome'),
        eb.val(JSON.stringify([...(change.changedFields ?? [])])).as('changed_fields'),
        eb.val(JSON.stringify([...(change.secretNames ?? [])])).as('secret_names'),
      ]);
    })
    .execute();
}

export interface AuditFilters {
  /** A key's id, or `berth` for the changes Berth made itself. */
  actor?: string;
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
  if (filters.actor === 'berth') query = query.where('actor_type', '=', 'berth');
  else if (filters.actor) query = query.where('actor_key_id', '=', filters.actor);
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
