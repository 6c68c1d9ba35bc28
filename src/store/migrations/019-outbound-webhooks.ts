import type { Kysely, Migration } from 'kysely';

/**
 * Outbound webhooks (docs/webhooks.md): subscriptions per workspace, the outbox of events
 * written in the transaction of the change they announce, one delivery per event and
 * subscription, and each attempt of a delivery. Times are ISO text, as everywhere.
 */
export const outboundWebhooks: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('webhook_subscriptions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('url', 'text', (c) => c.notNull())
      // A JSON array of event types; matched with LIKE on the quoted type, the same on both databases.
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('secret_encrypted', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('failing_since', 'text')
      .addColumn('disabled_at', 'text')
      .addColumn('disabled_reason', 'text')
      .execute();
    await db.schema.createIndex('webhook_subscriptions_workspace').on('webhook_subscriptions').columns(['workspace_id', 'created_at']).execute();

    await db.schema
      .createTable('webhook_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('occurred_at', 'text', (c) => c.notNull())
      .execute();
    // Rows stay only until the deliverer has made their deliveries: the table is the queue.
    await db.schema.createIndex('webhook_events_time').on('webhook_events').column('occurred_at').execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('subscription_id', 'text', (c) => c.notNull().references('webhook_subscriptions.id').onDelete('cascade'))
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      // The exact bytes signed and sent, the same on every attempt.
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('next_attempt_at', 'text')
      .addColumn('leased_until', 'text')
      .addColumn('last_status_code', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('redelivery_of', 'text')
      .execute();
    await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['state', 'next_attempt_at']).execute();
    await db.schema.createIndex('webhook_deliveries_subscription').on('webhook_deliveries').columns(['subscription_id', 'created_at']).execute();

    await db.schema
      .createTable('webhook_attempts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
      .addColumn('number', 'integer', (c) => c.notNull())
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('response_excerpt', 'text')
      .addColumn('error', 'text')
      .execute();
    // When the listener's going silent was last announced (listener.offline); a later last_seen_at makes it announceable again.
    await db.schema.alterTable('listeners').addColumn('offline_announced_at', 'text').execute();
    await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'number']).execute();
  },
};
