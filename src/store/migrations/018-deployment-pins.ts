import type { Kysely, Migration } from 'kysely';

/**
 * Rollback that holds (issue 21, item 2):
 * - `deployments.pinned_revision_id` / `pinned_at`: the revision a rollback pinned the
 *   deployment to, and since when; null when not pinned. While set, build on push makes
 *   no revision. Only written under the deployment's row lock, compared and set.
 * - `deployment_events.commit_sha`: the commit a `push_ignored_pinned` event names.
 */
export const deploymentPins: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('deployments').addColumn('pinned_revision_id', 'text').execute();
    await db.schema.alterTable('deployments').addColumn('pinned_at', 'text').execute();
    await db.schema.alterTable('deployment_events').addColumn('commit_sha', 'text').execute();
  },
};
