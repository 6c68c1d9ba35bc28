import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Db, migrateToLatest } from '../../src/store/database.js';
import { githubNoticeSchedule } from '../../src/store/repositories/github-notices.js';
import { describeEachDatabase } from '../support/database.js';
import { databaseAt, githubNoticeRow } from '../support/migrations.js';

/**
 * Migration 031 numbers a revision's waiting notices on, in the order an earlier version sent
 * them (time, then position), since the notifier now goes by position alone: a notice waiting
 * through the upgrade must not be sent before one of an earlier change.
 */
describeEachDatabase('migration 031 on notices waiting through an upgrade', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const first = '2026-11-27T10:00:00.000Z';
  const second = '2026-11-27T10:00:01.000Z';
  const notice = (id: string, revision: string | null, position: number, createdAt: string) =>
    githubNoticeRow(id, revision, position, createdAt, { attempts: 3, next_attempt_at: first, last_error: 'HTTP 502' });
  before(async () => {
    ({ db, close } = await databaseAt(kind, '030-build-job-inputs'));
    // One change that passed through two told statuses (positions 0 and 1), then a later change
    // (position 0 again, as each change numbered its own), inserted out of order.
    await db
      .insertInto('github_notices')
      .values([
        notice('later-change', 'rev', 0, second),
        notice('first-change-second-step', 'rev', 1, first),
        notice('first-change-first-step', 'rev', 0, first),
        notice('other-revision', 'other', 0, second),
        notice('refusal', null, 0, first),
      ] as never)
      .execute();
    await migrateToLatest(db);
  });
  after(async () => close?.());

  test("a revision's waiting notices are numbered in the order they were sent before; others keep theirs", async () => {
    const rows = await db.selectFrom('github_notices').select(['id', 'position']).orderBy('id').execute();
    assert.deepEqual(Object.fromEntries(rows.map((row) => [row.id, row.position])), {
      'first-change-first-step': 0,
      'first-change-second-step': 1,
      'later-change': 2,
      'other-revision': 0,
      refusal: 0,
    });
  });

  test('the notifier takes them one after another in that order', async () => {
    const sent: string[] = [];
    for (;;) {
      const { due } = await githubNoticeSchedule(db, second, 10);
      const next = due.find((row) => row.revision_id === 'rev');
      if (!next) break;
      sent.push(next.id);
      await db.deleteFrom('github_notices').where('id', '=', next.id).execute();
    }
    assert.deepEqual(sent, ['first-change-first-step', 'first-change-second-step', 'later-change']);
  });
});
