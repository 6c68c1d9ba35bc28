import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Db, migrateToLatest } from '../../src/store/database.js';
import { advanceBuildJobRelay, buildJobLogsAfter, findBuildJob, insertBuildJobLogs } from '../../src/store/repositories/build-jobs.js';
import { describeEachDatabase } from '../support/database.js';
import { buildJobRow, databaseAt } from '../support/migrations.js';

/** Migration 028 keeps the relay position of a job's log batches on the job: a job open across the upgrade starts at the beginning. */
describeEachDatabase('migration 028 and the relay position of a build job', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const at = new Date().toISOString();
  before(async () => {
    ({ db, close } = await databaseAt(kind, '027-event-id-fence'));
    // A job an earlier version left claimed mid-build, its columns as they were then.
    const job = buildJobRow('job', 'rev', 'claimed', at, { lease_token: 'token', lease_expires_at: at });
    await db
      .insertInto('build_jobs')
      .values(job as never)
      .execute();
    await migrateToLatest(db);
  });
  after(async () => close?.());

  test('an open job starts before its first batch; the position moves once, compare-and-set, and the batches after it are what is left', async () => {
    const job = await findBuildJob(db, 'job');
    assert.deepEqual([job?.relayed_attempt, job?.relayed_seq], [0, -1]);
    for (const seq of [0, 1, 2]) assert.ok(await insertBuildJobLogs(db, 'job', 1, seq, [{ level: 'INFO', message: `line ${seq}` }], at));
    const start = { attempt: 0, seq: -1 };
    assert.equal((await buildJobLogsAfter(db, 'job', start)).length, 3);
    // Two engines read the same position: the first to move it relays, the other writes nothing.
    assert.equal(await advanceBuildJobRelay(db, 'job', start, { attempt: 1, seq: 1 }), true);
    assert.equal(await advanceBuildJobRelay(db, 'job', start, { attempt: 1, seq: 1 }), false);
    const moved = await findBuildJob(db, 'job');
    const position = { attempt: moved?.relayed_attempt ?? -1, seq: moved?.relayed_seq ?? -1 };
    assert.deepEqual(
      (await buildJobLogsAfter(db, 'job', position)).map((batch) => batch.lines),
      [[{ level: 'INFO', message: 'line 2' }]],
    );
    assert.equal(await insertBuildJobLogs(db, 'job', 1, 1, [{ level: 'INFO', message: 'line 1' }], at), false, 'a relayed batch sent again is still known');
  });
});
