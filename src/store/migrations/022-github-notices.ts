import type { Kysely, Migration } from 'kysely';

/**
 * What Berth tells GitHub about revisions of deployments on `github` integrations (commit
 * statuses and GitHub deployments, docs/webhooks.md): `github_notices` is an outbox written
 * in the transaction of each status change and worked off after commit, in order per
 * revision, with retries; `steps_done` remembers which of a notice's calls succeeded, so a
 * retry repeats none. `github_deployments` keeps the GitHub deployment made for a revision.
 */
export const githubNotices: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('github_notices')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('revision_id', 'text', (c) => c.notNull())
      .addColumn('deployment_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('message', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('steps_done', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'text')
      .addColumn('leased_until', 'text')
      .addColumn('last_error', 'text')
      .execute();
    await db.schema.createIndex('github_notices_due').on('github_notices').columns(['state', 'next_attempt_at']).execute();
    await db.schema.createIndex('github_notices_revision').on('github_notices').columns(['revision_id', 'created_at', 'position']).execute();
    await db.schema
      .createTable('github_deployments')
      .addColumn('revision_id', 'text', (c) => c.primaryKey())
      .addColumn('github_deployment_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
  },
};
