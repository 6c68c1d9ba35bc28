import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Db, migrateToLatest } from '../../src/store/database.js';
import { githubNoticeSchedule } from '../../src/store/repositories/github-notices.js';
import { describeEachDatabase } from '../support/database.js';
import { databaseAt } from '../support/migrations.js';

/** Migration 026 makes `github_notices` anew (SQLite cannot drop a NOT NULL): what was queued before is still sent after. */
describeEachDatabase('migration 026 on notices queued by an earlier version', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const at = new Date().toISOString();
  before(async () => {
    ({ db, close } = await databaseAt(kind, '025-audit-actor-reason'));
    await db
      .insertInto('github_notices')
      .values({
        id: 'queued',
        revision_id: 'rev',
        deployment_id: 'dep',
        position: 0,
        status: 'DEPLOYED',
        message: 'Deployed.',
        created_at: at,
        state: 'pending',
        steps_done: 1,
        attempts: 2,
        next_attempt_at: at,
        leased_until: null,
        last_error: 'HTTP 500',
      })
      .execute();
    await migrateToLatest(db);
  });
  after(async () => close?.());

  test('a notice queued before is kept as it was and still due, and a refusal without revision or status is queued beside it', async () => {
    const [kept] = await db.selectFrom('github_notices').selectAll().execute();
    assert.deepEqual(kept, {
      id: 'queued',
      kind: 'revision',
      revision_id: 'rev',
      deployment_id: 'dep',
      commit_sha: null,
      position: 0,
      status: 'DEPLOYED',
      message: 'Deployed.',
      created_at: at,
      state: 'pending',
      steps_done: 1,
      attempts: 2,
      next_attempt_at: at,
      leased_until: null,
      last_error: 'HTTP 500',
    });
    // A refusal has neither revision nor status (the NOT NULLs of migration 022 refused it).
    await db
      .insertInto('github_notices')
      .values({
        id: 'refusal',
        kind: 'preview_refused',
        deployment_id: 'dep',
        commit_sha: 'a'.repeat(40),
        position: 0,
        message: 'No preview.',
        created_at: at,
        state: 'pending',
        steps_done: 0,
        attempts: 0,
        next_attempt_at: at,
      })
      .execute();
    const { due } = await githubNoticeSchedule(db, new Date(Date.parse(at) + 1000).toISOString(), 10);
    assert.deepEqual(due.map((row) => [row.id, row.kind]).sort(), [
      ['queued', 'revision'],
      ['refusal', 'preview_refused'],
    ]);
  });
});
