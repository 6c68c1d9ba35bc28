import type { Kysely, Migration } from 'kysely';

/**
 * The uploaded project archives that are pending (being received, or received and not yet
 * built or expired), with the bytes each takes or has reserved: what the per-deployment and
 * per-workspace limits on pending uploads count. The archives themselves stay files in the
 * data directory; a row goes with its deployment (and workspace) when that is deleted.
 */
export const uploadArchives: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('upload_archives')
      .addColumn('object_path', 'text', (c) => c.primaryKey())
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('bytes', 'bigint', (c) => c.notNull())
      .addColumn('stored', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('upload_archives_workspace_idx').on('upload_archives').column('workspace_id').execute();
    await db.schema.createIndex('upload_archives_deployment_idx').on('upload_archives').column('deployment_id').execute();
  },
};
