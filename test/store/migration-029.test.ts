import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Db, migrateToLatest } from '../../src/store/database.js';
import { findBuildJobToAnswer, markBuildJobAnswered } from '../../src/store/repositories/build-jobs.js';
import { describeEachDatabase } from '../support/database.js';
import { buildJobRow, databaseAt } from '../support/migrations.js';

/**
 * Migration 029 records when an engine took a build job's outcome: jobs that ended before it
 * were answered by the engine of their time, so a revision built again (its image gone) never
 * takes an old job's outcome for its new build.
 */
describeEachDatabase('migration 029 and answered build jobs', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const at = new Date().toISOString();
  const job = (id: string, revision: string, status: string, createdAt: string) =>
    buildJobRow(id, revision, status, createdAt, { relayed_attempt: 0, relayed_seq: -1 });
  before(async () => {
    ({ db, close } = await databaseAt(kind, '028-build-job-relay'));
    const jobs = [job('old-success', 'built', 'succeeded', '2026-01-01T00:00:00.000Z'), job('claimed', 'building', 'claimed', '2026-01-02T00:00:00.000Z')];
    await db
      .insertInto('build_jobs')
      .values(jobs as never)
      .execute();
    await migrateToLatest(db);
  });
  after(async () => close?.());

  test('a job ended before the migration is answered; an open one is still waited for', async () => {
    assert.equal(await findBuildJobToAnswer(db, 'built'), undefined, 'an earlier engine took its outcome');
    assert.equal((await findBuildJobToAnswer(db, 'building'))?.id, 'claimed');
  });

  test('a job ended after it is taken once: found until an engine marks it answered', async () => {
    await db
      .insertInto('build_jobs')
      .values(job('unwatched', 'resumed', 'failed', at) as never)
      .execute();
    assert.equal((await findBuildJobToAnswer(db, 'resumed'))?.id, 'unwatched');
    await markBuildJobAnswered(db, 'unwatched', at);
    assert.equal(await findBuildJobToAnswer(db, 'resumed'), undefined);
  });
});
