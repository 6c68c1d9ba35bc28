import type { Kysely, Migration } from 'kysely';

/**
 * Build runners (docs/build-runners.md). `build_jobs` is one build of a revision handed to
 * runners: the engine's runner driver writes it and waits for its outcome; a runner claims
 * it under a lease (`lease_token`, `lease_expires_at`): a lease past its expiry may be taken
 * by another runner, and every report must carry the token it was given. The source's
 * credentials are kept encrypted only while the job is open. `build_job_logs` holds the log
 * batches a runner sent, keyed by (job, claim, sequence), so a batch sent twice is stored once.
 * `api_keys.runner_labels`: the labels a runner key may advertise (JSON; null for other roles).
 */
export const buildJobs: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('api_keys').addColumn('runner_labels', 'text').execute();
    await db.schema
      .createTable('build_jobs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('organization_id', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('deployment_id', 'text', (c) => c.notNull())
      .addColumn('revision_id', 'text', (c) => c.notNull())
      .addColumn('request', 'text', (c) => c.notNull())
      .addColumn('source_encrypted', 'text')
      .addColumn('required_labels', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('lease_token', 'text')
      .addColumn('lease_expires_at', 'text')
      .addColumn('runner_key_id', 'text')
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('deadline_at', 'text', (c) => c.notNull())
      .addColumn('result', 'text')
      .addColumn('error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('build_jobs_status_idx').on('build_jobs').columns(['organization_id', 'status', 'created_at']).execute();
    await db.schema.createIndex('build_jobs_revision_idx').on('build_jobs').column('revision_id').execute();
    await db.schema
      .createTable('build_job_logs')
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('lines', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('build_job_logs_pk', ['job_id', 'attempt', 'seq'])
      .execute();
    await db.schema
      .createTable('build_runners')
      .addColumn('key_id', 'text', (c) => c.primaryKey())
      .addColumn('organization_id', 'text', (c) => c.notNull())
      .addColumn('labels', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'text', (c) => c.notNull())
      .execute();
  },
};
