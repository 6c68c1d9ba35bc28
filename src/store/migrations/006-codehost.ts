import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Code-host integrations of a workspace, the branch heads a poller last saw, the push
 * deliveries already acted on, and the integration each code-host deployment builds
 * from as a column of its own (it was only inside `source_config`), so that deleting an
 * integration can tell whether deployments still use it.
 */
export const codehost: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('codehost_integrations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('installation_id', 'bigint', (c) => c.notNull())
      .addColumn('settings', 'text', (c) => c.notNull())
      .addColumn('credentials_encrypted', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('codehost_integrations_workspace_idx').on('codehost_integrations').columns(['workspace_id', 'created_at']).execute();

    await db.schema
      .createTable('codehost_branch_heads')
      .addColumn('integration_id', 'text', (c) => c.notNull().references('codehost_integrations.id').onDelete('cascade'))
      .addColumn('repository', 'text', (c) => c.notNull())
      .addColumn('branch', 'text', (c) => c.notNull())
      .addColumn('commit_sha', 'text', (c) => c.notNull())
      .addColumn('seen_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('codehost_branch_heads_pk', ['integration_id', 'repository', 'branch'])
      .execute();

    await db.schema
      .createTable('codehost_deliveries')
      .addColumn('integration_id', 'text', (c) => c.notNull().references('codehost_integrations.id').onDelete('cascade'))
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('codehost_deliveries_pk', ['integration_id', 'delivery_id'])
      .execute();

    await db.schema.alterTable('deployments').addColumn('integration_id', 'text').execute();
    await db.schema.createIndex('deployments_integration_idx').on('deployments').column('integration_id').execute();
    await backfillIntegrationIds(db);
  },
};

async function backfillIntegrationIds(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ id: string; source_config: string }>`
    select id, source_config from deployments where source in ('codehost', 'github')`.execute(db);
  for (const row of rows) {
    const integrationId = (JSON.parse(row.source_config) as { integration_id?: string | null }).integration_id ?? null;
    if (integrationId) await sql`update deployments set integration_id = ${integrationId} where id = ${row.id}`.execute(db);
  }
}
