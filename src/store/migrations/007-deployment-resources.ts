import type { Kysely, Migration } from 'kysely';

/** Databases and caches Berth provisioned for a deployment, with the URI its containers get (encrypted). */
export const deploymentResources: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('deployment_resources')
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('uri_encrypted', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('deployment_resources_pk', ['deployment_id', 'kind'])
      .execute();
  },
};
