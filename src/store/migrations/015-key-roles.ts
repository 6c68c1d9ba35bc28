import type { Kysely, Migration } from 'kysely';

/**
 * Keys may be `read_only` or `deployer` besides `admin`, `member` and `listener` (the role
 * column is text, so existing keys keep their role as it is); a deployer key lists the
 * deployments it may act on (JSON; null for every other role).
 */
export const keyRoles: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('api_keys').addColumn('deployment_ids', 'text').execute();
  },
};
