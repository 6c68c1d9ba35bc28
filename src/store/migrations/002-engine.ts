import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/** Leases, runtime results, the event log (status changes and log lines) and step records. */
export const engineSchema: Migration = {
  async up(db: Kysely<unknown>) {
    const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
    // An ever-growing integer id orders events exactly and serves as the SSE event id and
    // log cursor; the two databases spell such a column differently.
    const serialId = sqlite ? sql`integer primary key autoincrement` : sql`bigint generated always as identity primary key`;

    await db.schema.alterTable('deployments').addColumn('lease_owner', 'text').execute();
    await db.schema.alterTable('deployments').addColumn('lease_expires_at', 'text').execute();
    await db.schema.alterTable('deployments').addColumn('url', 'text').execute();
    await db.schema.createIndex('deployments_status_idx').on('deployments').column('status').execute();

    await db.schema.alterTable('revisions').addColumn('image_ref', 'text').execute();
    await db.schema.alterTable('revisions').addColumn('runtime_handle', 'text').execute();
    await db.schema.alterTable('revisions').addColumn('url', 'text').execute();
    await db.schema.createIndex('revisions_deployment_status_idx').on('revisions').columns(['deployment_id', 'status']).execute();

    await db.schema
      .createTable('deployment_events')
      .addColumn('id', serialId)
      .addColumn('deployment_id', 'text', (c) => c.notNull().references('deployments.id').onDelete('cascade'))
      .addColumn('revision_id', 'text')
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('log_type', 'text')
      .addColumn('level', 'text')
      .addColumn('status', 'text')
      .addColumn('message', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('deployment_events_deployment_idx').on('deployment_events').columns(['deployment_id', 'id']).execute();
    await db.schema.createIndex('deployment_events_revision_idx').on('deployment_events').columns(['revision_id', 'kind', 'log_type', 'id']).execute();

    await db.schema
      .createTable('engine_step_runs')
      .addColumn('id', serialId)
      .addColumn('revision_id', 'text', (c) => c.notNull())
      .addColumn('step', 'text', (c) => c.notNull())
      .addColumn('worker', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .addColumn('outcome', 'text')
      .execute();
    await db.schema.createIndex('engine_step_runs_revision_idx').on('engine_step_runs').column('revision_id').execute();
  },
};
