import type { Kysely, Migration } from 'kysely';

/**
 * Preview deployments (issue 23, item 4; docs/previews.md):
 * - `deployments.preview_settings`: JSON of a parent's settings (domain/previews.ts), null when never set;
 * - `deployments.parent_deployment_id`, `preview_key` (`pr:<n>` or `branch:<name>`), `preview_origin`
 *   (JSON: the pull request or branch and its head) and `preview_active_at` (its last new
 *   commit, for idle removal): set on previews only. One preview per parent and key, which
 *   the unique index holds whichever process hears of the pull request.
 */
export const previews: Migration = {
  async up(db: Kysely<unknown>) {
    for (const column of ['preview_settings', 'parent_deployment_id', 'preview_key', 'preview_origin', 'preview_active_at']) {
      await db.schema.alterTable('deployments').addColumn(column, 'text').execute();
    }
    await db.schema.createIndex('deployments_preview_key').on('deployments').columns(['parent_deployment_id', 'preview_key']).unique().execute();
  },
};
