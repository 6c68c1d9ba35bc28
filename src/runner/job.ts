import type { Logger } from 'pino';
import type { RunnerJobView } from '../contract/build-runners.js';
import type { BuildDriver, BuildRequest, StepContext } from '../engine/drivers/types.js';
import { DriverError } from '../engine/drivers/types.js';
import { LeaseLostError, RunnerCallError, type RunnerClient } from './client.js';
import { LineSender } from './lines.js';
import type { JobOutcome } from './metrics.js';
import { type FetchedSource, fetchSource } from './source.js';
import { JobSpool } from './spool.js';

/** Where a job's files go under the runner's data directory. */
export interface JobDirs {
  archives: string;
  spool: string;
  /** The spool's bound (BERTH_RUNNER_SPOOL_MAX_MB); SPOOL_MAX_BYTES when not given. */
  spoolMaxBytes?: number;
}

/** What builds one job: the driver to call, given the job (its image name and push credential). */
export type DriverFor = (job: RunnerJobView) => BuildDriver;

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
  dirs: JobDirs,
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
  // The runner's own hold on the build's length: Berth's timeout cancels the job too, but a runner cut off from Berth never hears it.
  const timeout = new AbortController();
  const timeoutSeconds = job.build_timeout_seconds ?? null;
  const timer = timeoutSeconds === null ? undefined : setTimeout(() => timeout.abort(new Error('build timeout')), timeoutSeconds * 1000);
  const building = AbortSignal.any([stop.signal, timeout.signal]);
  const spool = await JobSpool.open(dirs.spool, job.id, job.lease_token, dirs.spoolMaxBytes).catch((error: unknown) => {
    log.warn({ err: error }, "the job's log spool could not be made; its lines are kept in memory only");
    return undefined;
  });
  const lines = new LineSender(client, job, log, spool);
  let fetched: FetchedSource | undefined;
  let delivered = false;
  try {
    const answer = await client.source(job.id, job.lease_token);
    const step: StepContext = { signal: building, log: async (level, message) => lines.add(level, message) };
    log.info('building');
    let report: Parameters<RunnerClient['result']>[1];
    try {
      fetched = await fetchSource(client, job.id, answer, dirs.archives, building);
      const request: BuildRequest = {
        workspaceId: job.workspace_id,
        deploymentId: job.deployment_id,
        deploymentName: job.deployment_name,
        revisionId: job.revision_id,
        source: fetched.source,
        graphConfigPath: job.graph_config_path,
        installCommand: job.install_command,
        buildCommand: job.build_command,
        ...(timeoutSeconds === null ? {} : { timeoutSeconds }),
        resourceSpec: job.resources ?? null,
      };
      const driver = driverFor(job);
      const toBuild = await identifyFirst(client, job, driver, request, step, lines, building);
      if (toBuild === null) {
        delivered = true;
        log.info('Berth reuses an image built from the same inputs: nothing to build');
        return 'reused';
      }
      const built = await driver.build(toBuild, step);
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
      if (timeout.signal.aborted) {
        log.warn({ timeoutSeconds }, 'the build ran past its build_timeout_seconds; the runner stopped it');
        const message = `the build took longer than ${timeoutSeconds} s (build_timeout_seconds) and the build runner stopped it.`;
        lines.add('ERROR', message);
        report = { lease_token: job.lease_token, status: 'failed', message };
      } else {
        // A download that failed on the way: another claim tries again once this lease runs out.
        if (error instanceof RunnerCallError) throw error;
        const message = error instanceof DriverError ? error.message : 'the build runner failed unexpectedly; its log has the details.';
        if (!(error instanceof DriverError)) log.error({ err: error }, 'build failed unexpectedly');
        report = { lease_token: job.lease_token, status: 'failed', message };
      }
    }
    // The build is over: its downloaded source goes now, before the report moves the revision
    // on, not once Berth has taken it (on a busy host, long after). A file that cannot be
    // removed must not cost the report; `finally` tries again.
    await fetched?.release().catch((error: unknown) => log.warn({ err: error }, 'the downloaded source could not be removed yet'));
    const { lease_token: _token, ...spooled } = report;
    await lines.spoolReport(spooled);
    log.info({ status: report.status }, 'the build ended; its report is spooled until Berth has its log lines');
    await lines.delivered();
    if (lost.value) {
      log.info('Berth no longer wants this build (it was cancelled, or another runner holds it): its report is dropped');
      return 'stopped';
    }
    await untilTaken(() => client.result(job.id, report), stop.signal);
    delivered = true;
    log.info({ status: report.status }, 'build reported');
    return report.status;
  } catch (error) {
    if (error instanceof LeaseLostError) log.info('Berth no longer wants this build (it was cancelled, or another runner holds it): its report is dropped');
    if (error instanceof LeaseLostError || stop.signal.aborted) return 'stopped';
    log.error({ err: error }, 'the job could not be run');
    return 'abandoned';
  } finally {
    await fetched?.release();
    clearInterval(heartbeat);
    clearTimeout(timer);
    stopping.removeEventListener('abort', onStop);
    lines.stop();
    // Kept only when the runner stops with lines or a report Berth has not taken: its next start delivers them.
    if (delivered || lost.value || !stopping.aborted) await lines.discard();
    else await lines.keep();
  }
}

/**
 * The identify phase (docs/build-runners.md, "Build reuse"): a driver that can tell what the
 * build would be made from (the commit, langgraph.json, the base image's id) reports it, and
 * the control plane answers whether an image built from the same inputs serves the revision.
 * Null: it does, the job is over. Otherwise the request to build, its ref pinned to the commit
 * reported, so the build is of what was reported. Anything that cannot be told or reported
 * simply builds, as the control plane's own reuse does.
 */
async function identifyFirst(
  client: RunnerClient,
  job: RunnerJobView,
  driver: BuildDriver,
  request: BuildRequest,
  step: StepContext,
  lines: LineSender,
  signal: AbortSignal,
): Promise<BuildRequest | null> {
  if (!driver.identify) return request;
  let identified;
  try {
    identified = await driver.identify(request, step);
  } catch (error) {
    if (signal.aborted) throw error;
    await step.log('INFO', `Could not tell the build's inputs before building (${error instanceof Error ? error.message : String(error)}); building.`);
    return request;
  }
  const { install_command: _install, build_command: _build, ...reported } = identified.inputs;
  const env = identified.env;
  // Its lines come before the answer in the build log; once an image is reused, the job takes none.
  await lines.sendNow();
  let answer;
  try {
    answer = await untilTaken(
      () => client.inputs(job.id, { lease_token: job.lease_token, inputs: reported, ...(Object.keys(env).length > 0 ? { env } : {}) }),
      signal,
      (error) => error instanceof RunnerCallError && error.status !== undefined && error.status < 500,
    );
  } catch (error) {
    if (!(error instanceof RunnerCallError)) throw error;
    await step.log('INFO', `Berth did not take the build's inputs (${error.message}); building.`);
    return request;
  }
  if (answer?.action === 'reused') return null;
  const commit = reported.commit_sha;
  return request.source.kind === 'git' && commit ? { ...request, source: { ...request.source, ref: commit } } : request;
}

/** Calls until the control plane takes it; a lost lease ends the trying, and so does an error `final` says no retry changes. */
async function untilTaken<T>(call: () => Promise<T>, signal: AbortSignal, final: (error: unknown) => boolean = () => false): Promise<T | undefined> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (error instanceof LeaseLostError || signal.aborted || final(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}
