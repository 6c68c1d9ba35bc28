import type { Kysely, Migration } from 'kysely';

/**
 * What a built revision's image was made from, so that a revision with the same inputs
 * reuses the image instead of building it again (engine/build-reuse.ts):
 * - `build_inputs`: JSON BuildInputs (domain/build-inputs.ts), shown on the revision so
 *   that people can see why a build did or did not happen;
 * - `build_key`: the digest of those inputs and the workspace, looked up by index (a key
 *   never matches another workspace's revision, whatever the query);
 * - `config_env_encrypted`: langgraph.json's `env` (object or env file) as read for this
 *   revision, encrypted like secrets, applied to its container at run time.
 */
export const buildInputs: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('revisions').addColumn('build_inputs', 'text').execute();
    await db.schema.alterTable('revisions').addColumn('build_key', 'text').execute();
    await db.schema.alterTable('revisions').addColumn('config_env_encrypted', 'text').execute();
    await db.schema.createIndex('revisions_build_key_idx').on('revisions').column('build_key').execute();
  },
};
