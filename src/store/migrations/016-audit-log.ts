import type { Kysely, Migration } from 'kysely';

/**
 * One row per change (docs/architecture.md, "Audit log"), written in the transaction of the
 * change. No foreign keys: a row outlives the key, deployment or workspace it names. Field
 * and secret names are JSON arrays; no value of either is ever stored.
 */
export const auditLog: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('audit_log')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('organization_id', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor_key_id', 'text')
      .addColumn('actor_key_name', 'text')
      .addColumn('actor_role', 'text')
      .addColumn('client_address', 'text')
      .addColumn('request_id', 'text')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target_type', 'text', (c) => c.notNull())
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addColumn('target_name', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('changed_fields', 'text', (c) => c.notNull())
      .addColumn('secret_names', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_log_workspace_time').on('audit_log').columns(['organization_id', 'workspace_id', 'created_at']).execute();
    await db.schema.createIndex('audit_log_time').on('audit_log').column('created_at').execute();
  },
};
