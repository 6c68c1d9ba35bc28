import { type Kysely, type Migration, sql } from 'kysely';

/**
 * A revision's notices are sent in the order of their positions, which now run on across the
 * revision's status changes instead of starting at 0 in each (store/repositories/github-notices.ts):
 * the time of a change may tie with, or (another replica's clock) precede, the one before.
 * Notices still waiting, say through a GitHub outage, are numbered in the order they were sent
 * before: by time, then position. Two that tie on both keep the same position, and go by time
 * as they did.
 */
export const githubNoticePositions: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      UPDATE github_notices SET position = (
        SELECT count(*) FROM github_notices AS earlier
        WHERE earlier.revision_id = github_notices.revision_id
          AND (earlier.created_at < github_notices.created_at
            OR (earlier.created_at = github_notices.created_at AND earlier.position < github_notices.position))
      )
      WHERE revision_id IS NOT NULL
    `.execute(db);
  },
};
