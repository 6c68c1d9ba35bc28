import type { Kysely, Migration } from 'kysely';

/**
 * A build job's inputs as its runner reported them before building, with the key the control
 * plane worked out from them (docs/build-runners.md, "Build reuse"): JSON of a RevisionBuild,
 * null until reported. The engine takes it into the revision when the job ends, so later
 * revisions built from the same inputs reuse the image. Jobs before this migration have none.
 */
export const buildJobInputs: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('build_jobs').addColumn('inputs', 'text').execute();
  },
};
