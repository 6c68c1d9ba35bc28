import { type Kysely, type Migration, sql } from 'kysely';

/**
 * When an engine took a build job's outcome (the image or the failure) into its revision.
 * A runner that reports in the moment between one engine process stopping and another
 * resuming the revision ends a job nobody has answered yet: the resuming engine looks for
 * such a job as well as for an open one, instead of queueing the build again and losing the
 * result. Jobs that ended before this migration were answered by the engine of their time.
 */
export const buildJobAnswered: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('build_jobs').addColumn('answered_at', 'text').execute();
    await sql`UPDATE build_jobs SET answered_at = updated_at WHERE status NOT IN ('queued', 'claimed')`.execute(db);
  },
};
