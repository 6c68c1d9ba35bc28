import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import { LeaseLostError, RunnerCallError, type RunnerClient } from './client.js';
import { spooledJobs } from './spool.js';

const RETRY_MS = 2_000;

/**
 * At start, before claiming anything: delivers what an earlier process of this runner left
 * in its spool (it was killed, or stopped while Berth was unreachable): each job's batches
 * in order, with their numbers (Berth stores a batch once), then its report if the build
 * had ended. Only while that claim still holds the job: once another runner took it, or
 * it ended, Berth refuses, and the spool is dropped (the build runs again elsewhere, with
 * its own lines). An unreachable Berth is asked again until it answers or the runner stops.
 */
export async function redeliverSpooled(client: RunnerClient, dir: string, logger: Logger, signal: AbortSignal): Promise<void> {
  for (const spooled of await spooledJobs(dir)) {
    const log = logger.child({ jobId: spooled.jobId });
    const lines = spooled.batches.reduce((sum, batch) => sum + batch.lines.length, 0);
    let next = 0;
    let reported = spooled.result === null;
    while (!signal.aborted) {
      try {
        for (; next < spooled.batches.length; next++) {
          const batch = spooled.batches[next];
          if (batch) await client.logs(spooled.jobId, { lease_token: spooled.leaseToken, seq: batch.seq, lines: batch.lines });
        }
        if (!reported && spooled.result) {
          await client.result(spooled.jobId, { ...spooled.result, lease_token: spooled.leaseToken });
          reported = true;
        }
        log.info({ lines, reported: spooled.result?.status ?? null }, 'delivered what an earlier run of this runner had spooled');
        break;
      } catch (error) {
        if (error instanceof LeaseLostError) {
          log.info({ lines }, 'the spooled lines of a job this runner no longer holds are dropped');
          break;
        }
        if (error instanceof RunnerCallError && error.status !== undefined && error.status < 500) {
          log.warn({ err: error }, 'Berth refused the spooled lines; they are dropped');
          break;
        }
        log.warn({ err: error }, 'delivering spooled lines failed; trying again');
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    if (!signal.aborted) await rm(spooled.file, { force: true });
  }
}
