import { type Kysely, type Migration, sql } from 'kysely';

export const initialSchema: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('organizations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('workspaces')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('workspaces_org_name_unique', ['organization_id', 'name'])
      .execute();

    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('key_hash', 'text', (c) => c.notNull().unique())
      .addColumn('key_hint', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('listeners')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('compute_type', 'text', (c) => c.notNull())
      .addColumn('compute_id', 'text', (c) => c.notNull())
      .addColumn('compute_config', 'text', (c) => c.notNull())
      .addColumn('version', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('listeners_workspace_compute_unique', ['workspace_id', 'compute_id'])
      .execute();

    await db.schema
      .createTable('deployments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('display_name', 'text')
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('source_config', 'text', (c) => c.notNull())
      .addColumn('deployment_type', 'text', (c) => c.notNull())
      // No foreign key: a listener with deployments cannot be deleted (checked by the service
      // with a clear 409), and the engine may still need the id while a deployment tears down.
      .addColumn('listener_id', 'text')
      .addColumn('image_version', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('remote_reconciled', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('latest_revision_id', 'text')
      .addColumn('active_revision_id', 'text')
      .addColumn('revision_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    // Names become DNS labels and Kubernetes names, where case does not count.
    await sql`create unique index deployments_workspace_name_unique on deployments (workspace_id, lower(name))`.execute(db);
    await db.schema.createIndex('deployments_workspace_created_idx').on('deployments').columns(['workspace_id', 'created_at', 'id']).execute();
    await db.schema.createIndex('deployments_listener_idx').on('deployments').column('listener_id').execute();

    await db.schema
      .createTable('revisions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('source_revision_config', 'text', (c) => c.notNull())
      .addColumn('resource_spec', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('status_message', 'text')
      .addColumn('remote_reconciled', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      // Revision numbers make "newest first" exact even within one millisecond, and make a
      // lost race between two writers a unique violation instead of a silent duplicate.
      .addUniqueConstraint('revisions_deployment_seq_unique', ['deployment_id', 'seq'])
      .execute();
    await db.schema.createIndex('revisions_status_idx').on('revisions').column('status').execute();

    await db.schema
      .createTable('revision_secrets')
      .addColumn('revision_id', 'text', (c) => c.notNull().references('revisions.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('value_encrypted', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('revision_secrets_pk', ['revision_id', 'name'])
      .execute();

    await db.schema
      .createTable('oauth_providers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('provider_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('client_secret_encrypted', 'text', (c) => c.notNull())
      .addColumn('auth_url', 'text', (c) => c.notNull())
      .addColumn('token_url', 'text', (c) => c.notNull())
      .addColumn('uses_pkce', 'integer', (c) => c.notNull())
      .addColumn('code_challenge_method', 'text')
      .addColumn('provider_type', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('oauth_providers_org_provider_unique', ['organization_id', 'provider_id'])
      .execute();
  },
};
