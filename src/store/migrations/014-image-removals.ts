import type { Kysely, Migration } from 'kysely';

/**
 * Built images leave with their revisions. A built revision records what identifies its image
 * beyond its name (`image_id` in the local store, `image_digest` in the registry), so that a
 * name moved to another image is never taken for it. `image_removals` is the queue of images
 * whose building revision is gone (retention, or its deployment's delete), written in the
 * transaction that removes the revision and worked off by the engine (engine/image-reaper.ts),
 * so a crash or a failed removal is retried. No foreign keys: a row outlives its deployment.
 */
export const imageRemovals: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('revisions').addColumn('image_id', 'text').execute();
    await db.schema.alterTable('revisions').addColumn('image_digest', 'text').execute();
    await db.schema
      .createTable('image_removals')
      .addColumn('image_ref', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('deployment_id', 'text', (c) => c.notNull())
      .addColumn('image_id', 'text')
      .addColumn('image_digest', 'text')
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'text', (c) => c.notNull())
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('image_removals_due_idx').on('image_removals').column('next_attempt_at').execute();
  },
};
