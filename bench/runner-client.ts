/**
 * A bench runner process for the runners scenario (bench/runners.ts): the runner protocol
 * as `berth builder` speaks it, with the runner's own client (src/runner/client.ts), and a
 * build that costs nothing. It claims a job (long poll), asks for its source and downloads
 * the uploaded archive, sends two log batches with a heartbeat between them, and reports
 * the job's image as pushed; so the control plane does all of its work for a build and the
 * runner none of a real one (no git, no buildah, no push).
 *
 * Prints one JSON line per job: `{"event":"claimed"|"done","revision":…,"at":…}`, `at`
 * in milliseconds of the wall clock (performance.timeOrigin + now), comparable across
 * processes on one machine. Stops on SIGTERM.
 *
 *   BERTH_URL=… BERTH_RUNNER_KEY=… node --import tsx bench/runner-client.ts
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LeaseLostError, RunnerClient } from '../src/runner/client.js';
import type { LogBatch } from '../src/contract/build-runners.js';

const url = process.env.BERTH_URL;
const key = process.env.BERTH_RUNNER_KEY;
if (!url || !key) throw new Error('BERTH_URL and BERTH_RUNNER_KEY are required');
const client = new RunnerClient(url, key);
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-runner-'));
const clock = () => performance.timeOrigin + performance.now();
const emit = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const lines = (from: number, count: number): LogBatch['lines'] =>
  Array.from({ length: count }, (_, i) => ({ level: 'INFO' as const, message: `STEP ${from + i}/40: RUN a bench build step that does nothing` }));

async function buildOne(): Promise<void> {
  const { job } = await client.claim([], 30, stop.signal);
  if (!job) return;
  emit({ event: 'claimed', revision: job.revision_id, at: clock() });
  const token = job.lease_token;
  const source = await client.source(job.id, token);
  if (source.kind === 'archive') {
    const file = path.join(workDir, `${job.id}.tar.gz`);
    await client.download(source.url, file, stop.signal);
    fs.rmSync(file, { force: true });
  }
  await client.logs(job.id, { lease_token: token, seq: 0, lines: lines(1, 20) });
  await client.heartbeat(job.id, token);
  await client.logs(job.id, { lease_token: token, seq: 1, lines: lines(21, 20) });
  await client.result(job.id, {
    lease_token: token,
    status: 'succeeded',
    image: job.image,
    digest: `sha256:${randomBytes(32).toString('hex')}`,
    commit_sha: null,
  });
  emit({ event: 'done', revision: job.revision_id, at: clock() });
}

async function main(): Promise<void> {
  emit({ event: 'ready', at: clock() });
  while (!stop.signal.aborted) {
    try {
      await buildOne();
    } catch (error) {
      if (stop.signal.aborted) break;
      // A lost lease is the protocol working (another runner took the job); anything else is the bench's failure.
      emit({ event: 'error', lease: error instanceof LeaseLostError, message: error instanceof Error ? error.message : String(error) });
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`bench runner failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => fs.rmSync(workDir, { recursive: true, force: true }));
