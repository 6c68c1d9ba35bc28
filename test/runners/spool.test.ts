import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import type { LogBatch, RunnerJobView } from '../../src/contract/build-runners.js';
import type { BuildDriver } from '../../src/engine/drivers/types.js';
import { RunnerCallError, type RunnerClient } from '../../src/runner/client.js';
import { loadRunnerConfig } from '../../src/runner/config.js';
import { runJob } from '../../src/runner/job.js';
import { LineSender } from '../../src/runner/lines.js';
import { JobSpool, SPOOL_MAX_BYTES, spooledJobs } from '../../src/runner/spool.js';
import { eventually } from '../support/runtimes.js';

/**
 * The runner's log spool on a real disk, without a control plane: what a later start would
 * deliver, and what happens when Berth stays unreachable past the spool's bound.
 * The whole path through a real control plane and a restarted runner is in runners.test.ts.
 */

function tempSpool(t: { after: (fn: () => void) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-spool-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'spool');
}

test('a spool keeps unacknowledged batches and the report, 0600, and a torn last record is ignored', async (t) => {
  const dir = tempSpool(t);
  const jobId = randomUUID();
  const spool = await JobSpool.open(dir, jobId, 'lease-1');
  for (const seq of [0, 1, 2]) {
    assert.ok(spool.reserve(seq, [{ level: 'INFO', message: `batch ${seq}` }]));
    await spool.batch(seq, [{ level: 'INFO', message: `batch ${seq}` }]);
  }
  await spool.acked(0);
  await spool.result({ status: 'failed', message: 'broke' });
  await spool.close();
  assert.equal(fs.statSync(spool.file).mode & 0o777, 0o600);
  assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  fs.appendFileSync(spool.file, '{"seq":3,"lin');
  const [found, ...others] = await spooledJobs(dir);
  assert.equal(others.length, 0);
  assert.deepEqual(
    { jobId: found?.jobId, leaseToken: found?.leaseToken, seqs: found?.batches.map((batch) => batch.seq), result: found?.result },
    { jobId, leaseToken: 'lease-1', seqs: [1, 2], result: { status: 'failed', message: 'broke' } },
  );
});

test('once every batch is acknowledged the spool holds only the claim; removed, it is gone', async (t) => {
  const dir = tempSpool(t);
  const spool = await JobSpool.open(dir, randomUUID(), 'lease-2');
  assert.ok(spool.reserve(0, [{ level: 'INFO', message: 'x'.repeat(1000) }]));
  await spool.batch(0, [{ level: 'INFO', message: 'x'.repeat(1000) }]);
  const full = fs.statSync(spool.file).size;
  await spool.acked(0);
  assert.ok(fs.statSync(spool.file).size < full / 10, 'cut back to its first record');
  assert.deepEqual((await spooledJobs(dir))[0]?.batches, []);
  await spool.remove();
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('past its bound the spool drops lines, and the first batch after says how many', async (t) => {
  const dir = tempSpool(t);
  const job = { id: randomUUID(), lease_token: 'lease-3' } as RunnerJobView;
  const sent: LogBatch[] = [];
  let attempts = 0;
  const client = {
    logs: async (_jobId: string, batch: LogBatch) => {
      // Unreachable at first: the first batch waits, unacknowledged, while the next lines come.
      if (attempts++ === 0) throw new RunnerCallError('Berth is unreachable');
      sent.push(batch);
      return { stored: true };
    },
  } as unknown as RunnerClient;
  const spool = await JobSpool.open(dir, job.id, job.lease_token, 30_000);
  const lines = new LineSender(client, job, pino({ level: 'silent' }), spool);
  t.after(() => lines.stop());
  // 200 lines make a batch of about 20 kB: the first fits, the second does not.
  for (let n = 0; n < 400; n++) lines.add('INFO', `line ${n} ${'y'.repeat(80)}`);
  lines.add('INFO', 'after the gap');
  await lines.spoolReport({ status: 'failed', message: 'done' });
  await lines.delivered();
  assert.deepEqual(
    sent.map((batch) => batch.seq),
    [0, 1],
  );
  assert.ok(attempts > 2, 'the first batch was sent again');
  assert.equal(sent[0]?.lines.length, 200);
  assert.deepEqual(
    sent[1]?.lines.map((line) => [line.level, line.message.replace(/y+/, '')]),
    [
      ['WARNING', "200 build log lines were dropped here: Berth could not be reached and the runner's spool for this build was full."],
      ['INFO', 'after the gap'],
    ],
  );
  await eventually(async () => (await spooledJobs(dir))[0]?.batches.length === 0, 'both batches acknowledged in the spool');
  await lines.discard();
});

test("BERTH_RUNNER_SPOOL_MAX_MB bounds a job's spool as the 16 MB default does: past 1 MB lines are dropped and counted", async (t) => {
  const base = { BERTH_URL: 'http://berth.example', BERTH_RUNNER_KEY: 'berth_key' };
  assert.equal(loadRunnerConfig(base).spoolMaxBytes, SPOOL_MAX_BYTES);
  for (const nonsense of ['0', 'lots', '1.5', '-3', '1e3', '2000000']) {
    assert.throws(
      () => loadRunnerConfig({ ...base, BERTH_RUNNER_SPOOL_MAX_MB: nonsense }),
      (error: Error) => error.message.includes(`BERTH_RUNNER_SPOOL_MAX_MB must be an integer from 1 to 1048576 (got '${nonsense}')`),
    );
  }
  const config = loadRunnerConfig({ ...base, BERTH_RUNNER_SPOOL_MAX_MB: ' 1 ' });
  const dir = tempSpool(t);
  const job = { id: randomUUID(), lease_token: 'lease-4', lease_seconds: 30, image: 'registry.example/app:1' } as RunnerJobView;
  const sent: LogBatch[] = [];
  let attempts = 0;
  let reachable = false;
  const client = {
    source: async () => ({ kind: 'git', url: 'https://git.example/app.git', ref: 'main', credentials: null }),
    heartbeat: async () => ({ action: 'continue', lease_expires_at: new Date().toISOString() }),
    logs: async (_jobId: string, batch: LogBatch) => {
      attempts++;
      if (!reachable) throw new RunnerCallError('Berth is unreachable');
      sent.push(structuredClone(batch));
      return { stored: true };
    },
    result: async () => ({ outcome: 'applied' }),
  } as unknown as RunnerClient;
  // Batches of 200 lines of 3 kB (about 600 kB): the first waits unacknowledged, the next two would pass 1 MB.
  const driver: BuildDriver = {
    name: 'log-lines',
    build: async (_request, step) => {
      for (let n = 0; n < 600; n++) await step.log('INFO', `line ${n} ${'y'.repeat(3000)}`);
      await eventually(async () => attempts > 0, 'the first batch tried while Berth is unreachable');
      reachable = true;
      await step.log('INFO', 'after the gap');
      return { image: job.image, commitSha: null };
    },
  };
  const outcome = await runJob(client, job, () => driver, pino({ level: 'silent' }), new AbortController().signal, {
    archives: path.join(path.dirname(dir), 'archives'),
    spool: dir,
    spoolMaxBytes: config.spoolMaxBytes,
  });
  assert.equal(outcome, 'succeeded');
  assert.deepEqual(
    sent.map((batch) => batch.seq),
    [0, 1],
  );
  assert.equal(sent[0]?.lines.length, 200);
  assert.deepEqual(
    sent[1]?.lines.map((line) => [line.level, line.message]),
    [
      ['WARNING', "400 build log lines were dropped here: Berth could not be reached and the runner's spool for this build was full."],
      ['INFO', 'after the gap'],
    ],
  );
});
