import { type Kysely, type Migration, sql } from 'kysely';

/**
 * A preview refused (docs/previews.md, "The maximum") is told to GitHub through the same
 * retried outbox as revisions' statuses, but it has no revision: `github_notices` gains
 * `kind` (`revision` or `preview_refused`) and `commit_sha` (the commit a refusal is posted
 * on), and `revision_id` and `status` become nullable. SQLite cannot drop a NOT NULL, so the
 * table is made anew and its rows copied, the same statements on both databases.
 */
export const githubNoticeRefusals: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('github_notices_026')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull().defaultTo('revision'))
      .addColumn('revision_id', 'text')
      .addColumn('deployment_id', 'text', (c) => c.notNull())
      .addColumn('commit_sha', 'text')
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('status', 'text')
      .addColumn('message', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('steps_done', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'text')
      .addColumn('leased_until', 'text')
      .addColumn('last_error', 'text')
      .execute();
    const columns = sql.raw(
      'id, revision_id, deployment_id, position, status, message, created_at, state, steps_done, attempts, next_attempt_at, leased_until, last_error',
    );
    await sql`INSERT INTO github_notices_026 (${columns}) SELECT ${columns} FROM github_notices`.execute(db);
    // Its indexes go with it, and their names are free again for the new table's.
    await db.schema.dropTable('github_notices').execute();
    await db.schema.alterTable('github_notices_026').renameTo('github_notices').execute();
    await db.schema.createIndex('github_notices_due').on('github_notices').columns(['state', 'next_attempt_at']).execute();
    await db.schema.createIndex('github_notices_revision').on('github_notices').columns(['revision_id', 'created_at', 'position']).execute();
  },
};
