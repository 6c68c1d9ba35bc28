import type { Kysely, Migration } from 'kysely';

/**
 * Fair engine slots (docs/architecture.md, "The engine"): `engine_turns` says when each
 * workspace last got an engine slot, so the next free one goes to the workspace that waited
 * longest; its row is also what claims for the same workspace queue on, so that counting the
 * workspace's leases and taking one more cannot interleave across engine processes. The
 * index on `lease_expires_at` makes counting live leases cost the number of leases, not the
 * number of deployments.
 */
export const engineTurns: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('engine_turns')
      .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
      .addColumn('turn_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('deployments_lease_idx').on('deployments').column('lease_expires_at').execute();
  },
};
