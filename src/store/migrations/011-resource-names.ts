import type { Kysely, Migration } from 'kysely';

/**
 * Provisioned databases get random names (and Redis a key prefix) chosen before they are
 * created: `names` keeps them (JSON; null for rows of earlier versions, whose names are
 * derived from the deployment id), `ready` says whether the server has them yet, so a
 * crash in between retries with the same names instead of leaking a role or user.
 */
export const resourceNames: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('deployment_resources').addColumn('names', 'text').execute();
    await db.schema
      .alterTable('deployment_resources')
      .addColumn('ready', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
  },
};
