import type { Kysely, Migration } from 'kysely';

/**
 * Placement of builds on runners by labels (docs/build-runners.md): the labels a runner
 * must advertise to build for a workspace, or for the deployments on a listener (builds
 * next to where they run). One row per workspace or listener that requires any; `labels`
 * is a JSON array.
 *
 * And the env a runner reports with its image leaves the job's `result` JSON for a column of
 * its own, `env_encrypted`, which key rotation re-encrypts like every `*_encrypted` column.
 */
export const runnerLabels: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('runner_label_requirements')
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('organization_id', 'text', (c) => c.notNull())
      .addColumn('labels', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('runner_label_requirements_pk', ['scope', 'scope_id'])
      .execute();
    await db.schema.alterTable('build_jobs').addColumn('env_encrypted', 'text').execute();
  },
};
