import type { Kysely, Migration } from 'kysely';

/**
 * Where the engine has got to relaying a build job's log batches into the revision's build
 * log: the last batch relayed, (claim, seq), advanced compare-and-set in the transaction
 * that writes its lines. It lived in the driver's memory, so an engine that resumed a
 * revision (a restart, a lease taken over) relayed from the start and repeated every line.
 * A job's batches stay stored until it ends, so a batch a runner sends again is still known.
 */
export const buildJobRelay: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('build_jobs')
      .addColumn('relayed_attempt', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('build_jobs')
      .addColumn('relayed_seq', 'integer', (c) => c.notNull().defaultTo(-1))
      .execute();
  },
};
