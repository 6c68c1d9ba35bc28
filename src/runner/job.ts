import type { Logger } from 'pino';
import type { RunnerJobView } from '../contract/build-runners.js';
import type { BuildDriver, BuildRequest, LogLevel, StepContext } from '../engine/drivers/types.js';
import { DriverError } from '../engine/drivers/types.js';
import { LeaseLostError, RunnerCallError, type RunnerClient } from './client.js';
import type { JobOutcome } from './metrics.js';
import { type FetchedSource, fetchSource } from './source.js';

/** What builds one job: the driver to call, given the job (its image name and push credential). */
export type DriverFor = (job: RunnerJobView) => BuildDriver;

const LOG_FLUSH_MS = 500;
const LOG_BATCH_LINES = 200;
const RETRY_MS = 1_000;

/**
 * Runs one claimed job: fetches where its source is (downloading an uploaded archive), builds it with the driver, streams its
 * log lines in numbered batches (a batch is re-sent with its number until it is taken, so no
 * line is lost or repeated), heartbeats the lease, and reports the image or the failure. A
 * `cancel` answer or a lost lease stops the build at once and reports nothing more.
 */
export async function runJob(
  client: RunnerClient,
  job: RunnerJobView,
  driverFor: DriverFor,
  logger: Logger,
  stopping: AbortSignal,
  archiveDir: string,
): Promise<JobOutcome> {
  const log = logger.child({ jobId: job.id, revisionId: job.revision_id });
  const stop = new AbortController();
  const lost = { value: false };
  const onStop = () => stop.abort(new Error('the runner is stopping'));
  stopping.addEventListener('abort', onStop, { once: true });
  const heartbeat = setInterval(
    () => {
      client.heartbeat(job.id, job.lease_token).then(
        (answer) => {
          if (answer.action === 'cancel') {
            log.info('Berth cancelled the build');
            lost.value = true;
            stop.abort(new Error('cancelled by Berth'));
          }
        },
        (error: unknown) => {
          if (error instanceof LeaseLostError) {
            log.warn('the lease was lost: another runner may have the build');
            lost.value = true;
            stop.abort(new Error('lease lost'));
          } else log.warn({ err: error }, 'heartbeat failed; trying again');
        },
      );
    },
    Math.max(1000, (job.lease_seconds * 1000) / 3),
  );
  const lines = new LineSender(client, job, log);
  let fetched: FetchedSource | undefined;
  try {
    const answer = await client.source(job.id, job.lease_token);
    const step: StepContext = { signal: stop.signal, log: async (level, message) => lines.add(level, message) };
    log.info('building');
    let report: Parameters<RunnerClient['result']>[1];
    try {
      fetched = await fetchSource(client, job.id, answer, archiveDir, stop.signal);
      const request: BuildRequest = {
        workspaceId: job.workspace_id,
        deploymentId: job.deployment_id,
        deploymentName: job.deployment_name,
        revisionId: job.revision_id,
        source: fetched.source,
        graphConfigPath: job.graph_config_path,
        installCommand: job.install_command,
        buildCommand: job.build_command,
      };
      const built = await driverFor(job).build(request, step);
      report = {
        lease_token: job.lease_token,
        status: 'succeeded',
        image: built.image,
        digest: built.digest ?? null,
        commit_sha: built.commitSha,
        ...(built.env ? { env: built.env } : {}),
      };
    } catch (error) {
      if (stop.signal.aborted || error instanceof LeaseLostError) return 'stopped';
      // A download that failed on the way: another claim tries again once this lease runs out.
      if (error instanceof RunnerCallError) throw error;
      const message = error instanceof DriverError ? error.message : 'the build runner failed unexpectedly; its log has the details.';
      if (!(error instanceof DriverError)) log.error({ err: error }, 'build failed unexpectedly');
      report = { lease_token: job.lease_token, status: 'failed', message };
    }
    await lines.close();
    if (lost.value) return 'stopped';
    await untilTaken(() => client.result(job.id, report), stop.signal);
    log.info({ status: report.status }, 'build reported');
    return report.status;
  } catch (error) {
    if (error instanceof LeaseLostError || stop.signal.aborted) return 'stopped';
    log.error({ err: error }, 'the job could not be run');
    return 'abandoned';
  } finally {
    await fetched?.release();
    clearInterval(heartbeat);
    stopping.removeEventListener('abort', onStop);
    lines.stop();
  }
}

/** Calls until the control plane takes it; a lost lease ends the trying. */
async function untilTaken<T>(call: () => Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (error instanceof LeaseLostError || signal.aborted) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

/** Batches log lines and sends them in order, each batch with its number, again until it is taken. */
class LineSender {
  #pending: { level: LogLevel; message: string }[] = [];
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    private readonly client: RunnerClient,
    private readonly job: RunnerJobView,
    private readonly log: Logger,
  ) {}

  add(level: LogLevel, message: string): void {
    this.#pending.push({ level, message: message.slice(0, 8192) });
    if (this.#pending.length >= LOG_BATCH_LINES) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), LOG_FLUSH_MS);
  }

  async close(): Promise<void> {
    this.#flush();
    await this.#sending;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const batch = { lease_token: this.job.lease_token, seq: this.#seq++, lines: this.#pending };
    this.#pending = [];
    this.#sending = this.#sending.then(async () => {
      for (;;) {
        if (this.#stopped) return;
        try {
          await this.client.logs(this.job.id, batch);
          return;
        } catch (error) {
          if (error instanceof LeaseLostError) return;
          this.log.warn({ err: error }, 'sending log lines failed; sending them again');
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    });
  }
}
