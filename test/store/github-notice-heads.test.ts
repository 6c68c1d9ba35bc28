import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Db } from '../../src/store/database.js';
import { githubNoticeSchedule } from '../../src/store/repositories/github-notices.js';
import { describeEachDatabase, openTestDatabase } from '../support/database.js';
import { githubNoticeRow } from '../support/migrations.js';

const minute = (n: number) => new Date(Date.UTC(2026, 10, 27, 10, n)).toISOString();

/** A revision's notice (of deployment `dep-<revision>`), or with `revision` null a refusal of `commit` on `parent`. */
function notice(id: string, revision: string | null, position: number, createdAt: string, commit: string | null = null) {
  return githubNoticeRow(id, revision, position, createdAt, {
    deployment_id: revision === null ? 'parent' : `dep-${revision}`,
    commit_sha: commit,
    next_attempt_at: minute(0),
  });
}

/**
 * Which notice of a sequence goes first is decided by its position, whatever the clocks said:
 * with more notices waiting than the notifier reads at once, a revision's first notice, stamped
 * later than its second by a replica whose clock is behind, must still be the one sent.
 */
describeEachDatabase('the notice sent first of each sequence', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  before(async () => {
    ({ db, close } = await openTestDatabase(kind));
    const rows = [
      // The second step of `skewed` was stamped first; its first step after 600 others (300
      // revisions of two steps each: fewer sequences than are read at once, more notices).
      notice('skewed-second', 'skewed', 1, minute(1)),
      ...Array.from({ length: 300 }, (_, i) => [notice(`other-${i}-0`, `other-${i}`, 0, minute(2)), notice(`other-${i}-1`, `other-${i}`, 1, minute(2))]).flat(),
      notice('skewed-first', 'skewed', 0, minute(3)),
      // Two refusals of one pull request's commit, and one of another commit: each commit is its own sequence.
      notice('refusal-a1', null, 0, minute(1), 'a'.repeat(40)),
      notice('refusal-a2', null, 0, minute(2), 'a'.repeat(40)),
      notice('refusal-b', null, 0, minute(2), 'b'.repeat(40)),
    ];
    for (let start = 0; start < rows.length; start += 100) {
      await db
        .insertInto('github_notices')
        .values(rows.slice(start, start + 100) as never)
        .execute();
    }
  });
  after(async () => close?.());

  test("a revision's lowest position is its head, though stamped after more notices than are read at once", async () => {
    const { due } = await githubNoticeSchedule(db, minute(5), 1_000);
    const ids = new Set(due.map((row) => row.id));
    assert.ok(ids.has('skewed-first'), 'the first step was not offered');
    assert.ok(!ids.has('skewed-second'), 'the second step was offered before the first was sent');
    const others = due.filter((row) => row.revision_id?.startsWith('other-'));
    assert.equal(others.length, 300, 'a sequence was left out, or offered twice');
    assert.ok(
      others.every((row) => row.position === 0),
      'a second step was offered first',
    );
  });

  test('refusals of one commit go one at a time, oldest first, and another commit is not held up', async () => {
    const { due } = await githubNoticeSchedule(db, minute(5), 1_000);
    const refusals = due.filter((row) => row.revision_id === null).map((row) => row.id);
    assert.deepEqual(refusals.sort(), ['refusal-a1', 'refusal-b']);
  });
});
