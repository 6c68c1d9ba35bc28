import type { Kysely, Migration } from 'kysely';

/**
 * The listener protocol (docs/listener-protocol.md): keys scoped to one listener (removed
 * with it), the counter of each listener's desired state that agents long-poll on, and
 * when its agent was last heard from.
 */
export const listenerProtocol: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('api_keys')
      .addColumn('listener_id', 'text', (c) => c.references('listeners.id').onDelete('cascade'))
      .execute();
    await db.schema
      .alterTable('listeners')
      .addColumn('generation', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('listeners').addColumn('last_seen_at', 'text').execute();
  },
};
