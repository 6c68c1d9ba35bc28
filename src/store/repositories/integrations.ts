import type { Executor } from '../database.js';
import { inBatches } from '../batches.js';
import type { Database } from '../schema.js';

export type CodehostProviderKind = Database['codehost_integrations']['provider'];

/** A code-host integration with its settings decoded; credentials stay encrypted here. */
export interface IntegrationRecord {
  id: string;
  workspace_id: string;
  provider: CodehostProviderKind;
  name: string;
  installation_id: number;
  settings: Record<string, unknown>;
  credentials_encrypted: string | null;
  created_at: string;
  updated_at: string;
}

function decode(row: Database['codehost_integrations']): IntegrationRecord {
  return {
    ...row,
    // PostgreSQL answers bigint columns as text.
    installation_id: Number(row.installation_id),
    settings: JSON.parse(row.settings) as Record<string, unknown>,
  };
}

export async function insertIntegration(db: Executor, record: IntegrationRecord): Promise<void> {
  await db
    .insertInto('codehost_integrations')
    .values({ ...record, settings: JSON.stringify(record.settings) })
    .execute();
}

export async function findIntegration(db: Executor, workspaceId: string, id: string): Promise<IntegrationRecord | undefined> {
  const row = await db.selectFrom('codehost_integrations').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return row && decode(row);
}

/** For the engine and webhooks, which work across workspaces. */
export async function findIntegrationById(db: Executor, id: string): Promise<IntegrationRecord | undefined> {
  const row = await db.selectFrom('codehost_integrations').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decode(row);
}

export async function listIntegrations(db: Executor, workspaceId: string): Promise<IntegrationRecord[]> {
  const rows = await db.selectFrom('codehost_integrations').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id').execute();
  return rows.map(decode);
}

/** Every integration, for the git poller. */
export async function listAllIntegrations(db: Executor, provider: CodehostProviderKind): Promise<IntegrationRecord[]> {
  const rows = await db.selectFrom('codehost_integrations').selectAll().where('provider', '=', provider).orderBy('id').execute();
  return rows.map(decode);
}

export async function deleteIntegration(db: Executor, workspaceId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('codehost_integrations').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Records a push delivery; false when it was recorded before (a redelivery). */
export async function recordDelivery(db: Executor, integrationId: string, deliveryId: string, now: string): Promise<boolean> {
  const inserted = await db
    .insertInto('codehost_deliveries')
    .values({ integration_id: integrationId, delivery_id: deliveryId, received_at: now })
    .onConflict((oc) => oc.columns(['integration_id', 'delivery_id']).doNothing())
    .returning('delivery_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function branchHeads(db: Executor, integrationId: string, repository: string): Promise<Record<string, string>> {
  const rows = await db
    .selectFrom('codehost_branch_heads')
    .select(['branch', 'commit_sha'])
    .where('integration_id', '=', integrationId)
    .where('repository', '=', repository)
    .execute();
  return Object.fromEntries(rows.map((row) => [row.branch, row.commit_sha]));
}

/** Replaces what the poller remembers of a repository's branches. */
export async function saveBranchHeads(db: Executor, integrationId: string, repository: string, heads: Record<string, string>, now: string): Promise<void> {
  await db.deleteFrom('codehost_branch_heads').where('integration_id', '=', integrationId).where('repository', '=', repository).execute();
  const rows = Object.entries(heads).map(([branch, commit_sha]) => ({ integration_id: integrationId, repository, branch, commit_sha, seen_at: now }));
  await inBatches(rows, async (batch) => {
    await db.insertInto('codehost_branch_heads').values(batch).execute();
  });
}
