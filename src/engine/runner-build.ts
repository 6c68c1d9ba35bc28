import { randomUUID } from 'node:crypto';
import type { EventBus } from '../events/bus.js';
import { describeBuildInputs, reusingImageLine } from '../domain/build-inputs.js';
import type { RegistryLocation } from '../domain/registry-location.js';
import { builtImageName } from '../registry/image-names.js';
import { jobEnvContext, jobSourceContext } from '../security/build-job-contexts.js';
import type { Encryptor } from '../security/encryption.js';
import { type Db, nowIso } from '../store/database.js';
import {
  advanceBuildJobRelay,
  type BuildJobRecord,
  buildJobLogsAfter,
  buildRunnersSeenSince,
  cancelBuildJob,
  findBuildJob,
  findBuildJobToAnswer,
  insertBuildJob,
  markBuildJobAnswered,
  removeBuildJobLogs,
} from '../store/repositories/build-jobs.js';
import { requiredLabelsOfBuild } from '../store/repositories/runner-labels.js';
import { type EngineStepContext, isEngineStep, stopReasonOf } from './context.js';
import { type BuildDriver, type BuildRequest, type BuiltImage, DriverError, type LogLevel, type StepContext } from './drivers/types.js';

/** A runner counts as online when it asked for work this recently (a claim waits at most 60 s). */
const ONLINE_WINDOW_MS = 90_000;
const NO_RUNNER = 'Waiting for a build runner: none is online for this organization';
const noRunner = (labels: string[]) => (labels.length === 0 ? NO_RUNNER : `${NO_RUNNER} with the labels ${labels.join(', ')}`);
/** The safety net behind the bus: a wake-up lost between processes is noticed within this. */
const RECHECK_MS = 2_000;

export interface RunnerBuildOptions {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  /** Berth's registry, where runners push (the image name and the push credential's repository). */
  registry: Pick<RegistryLocation, 'host' | 'pathPrefix'> | undefined;
  /** BERTH_RUNNER_WAIT_SECONDS: how long a build waits for a runner to take it before it fails. */
  waitMs: number;
}

/**
 * With BERTH_BUILDER=runners the control plane builds nothing itself: each build becomes a
 * build job that `berth builder` processes claim (docs/build-runners.md). This driver writes
 * the job, relays the log lines its runner sends into the revision's build log (each batch
 * once, from the relay position kept on the job, whichever engine relayed before), and answers
 * what the runner reported. A stop (interruption, timeout, shutdown) cancels the job, which
 * the runner hears at its next heartbeat; an engine that resumes the revision waits for the
 * job still open, or takes the outcome of one that ended while no engine watched, rather
 * than queueing another.
 */
export class RunnerBuildDriver implements BuildDriver {
  readonly name = 'runners';

  constructor(private readonly options: RunnerBuildOptions) {}

  async build(request: BuildRequest, step: StepContext): Promise<BuiltImage> {
    if (!isEngineStep(step)) throw new Error('the runner build driver runs under the engine only: it relays log lines with the engine step’s logOnce');
    // A runner does the work: the engine's slot serves other deployments meanwhile.
    return step.awayFromSlot(() => this.#awaitRunner(request, step));
  }

  async #awaitRunner(request: BuildRequest, step: EngineStepContext): Promise<BuiltImage> {
    const { db, bus } = this.options;
    const job = (await findBuildJobToAnswer(db, request.revisionId)) ?? (await this.#queue(request));
    let wake: () => void = () => {};
    const unsubscribe = bus.subscribe((message) => {
      if (message.topic === 'build-job' && message.jobId === job.id) wake();
    });
    const onAbort = () => wake();
    step.signal.addEventListener('abort', onAbort);
    let claimsSeen = job.attempts;
    let toldNoRunner = false;
    let toldInputs = false;
    // Whether the revision's status_message says so now (step.note), so a runner that comes cleans it up.
    let noted = false;
    try {
      for (;;) {
        const waited = new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, RECHECK_MS).unref();
        });
        await this.#relayLogs(job.id, step);
        const now = await findBuildJob(db, job.id);
        if (!now) throw new DriverError('the build job was removed while it was waiting.');
        if (step.signal.aborted) {
          // A process that stops or loses its lease leaves the job to whoever resumes the revision.
          const reason = stopReasonOf(step.signal);
          if (reason !== 'shutdown' && reason !== 'lease-lost' && (await cancelBuildJob(db, job.id, reason ?? 'stopped by Berth', nowIso()))) {
            bus.publish({ topic: 'build-job', deploymentId: job.deployment_id, jobId: job.id });
          }
          throw step.signal.reason;
        }
        if (now.attempts > claimsSeen) {
          claimsSeen = now.attempts;
          await step.log(
            'INFO',
            claimsSeen === 1
              ? 'A build runner took the build.'
              : `A build runner took the build over (claim ${claimsSeen}; the previous runner lost its lease).`,
          );
        }
        if (now.inputs && !toldInputs) {
          // The runner's report of the inputs (docs/build-runners.md, "Build reuse"), said as a local build says it.
          toldInputs = true;
          await step.log('INFO', `Build inputs: ${describeBuildInputs(now.inputs)}.`);
          if (now.inputs.reused_from_revision_id === null) {
            const why = this.options.registry
              ? 'no revision of this workspace was built from them yet'
              : "images stay on the runners' machines without BERTH_REGISTRY, so none is reused";
            await step.log('INFO', `Building: ${why}.`);
          }
        }
        const ended = await this.#ended(now, step);
        if (ended) return ended;
        if (now.status === 'queued') {
          if (Date.parse(now.deadline_at) <= Date.now()) {
            await cancelBuildJob(db, job.id, 'no runner took it', nowIso());
            throw new DriverError(
              `no build runner took the build within ${Math.round(this.options.waitMs / 1000)} s (BERTH_RUNNER_WAIT_SECONDS): start \`berth builder\` with a runner key of this organization (docs/build-runners.md).`,
            );
          }
          const since = new Date(Date.now() - ONLINE_WINDOW_MS).toISOString();
          const online = (await buildRunnersSeenSince(db, now.organization_id, since, now.required_labels)) > 0;
          if (!online && !toldNoRunner) {
            toldNoRunner = true;
            await step.log('WARNING', `${noRunner(now.required_labels)} (start \`berth builder\`, docs/build-runners.md).`);
          }
          if (noted === online) {
            noted = !online;
            await step.note?.(noted ? `${noRunner(now.required_labels)}; the build fails if none takes it by ${now.deadline_at}.` : null);
          }
        } else if (noted) {
          noted = false;
          await step.note?.(null);
        }
        await waited;
      }
    } finally {
      unsubscribe();
      step.signal.removeEventListener('abort', onAbort);
    }
  }

  async #queue(request: BuildRequest): Promise<BuildJobRecord> {
    const { db, bus, encryptor } = this.options;
    const workspace = await db.selectFrom('workspaces').select('organization_id').where('id', '=', request.workspaceId).executeTakeFirstOrThrow();
    const deployment = await db.selectFrom('deployments').select('listener_id').where('id', '=', request.deploymentId).executeTakeFirst();
    const requiredLabels = await requiredLabelsOfBuild(db, request.workspaceId, deployment?.listener_id ?? null);
    const id = randomUUID();
    const { image, repository } = builtImageName(this.options.registry, request);
    const now = nowIso();
    const job = {
      id,
      organization_id: workspace.organization_id,
      workspace_id: request.workspaceId,
      deployment_id: request.deploymentId,
      revision_id: request.revisionId,
      request: {
        deployment_name: request.deploymentName,
        graph_config_path: request.graphConfigPath,
        install_command: request.installCommand,
        build_command: request.buildCommand,
        image,
        repository,
        // What the runner must hold the build to (it stops it itself, and sizes a Kubernetes Job with them); this engine's own timeout stands regardless.
        build_timeout_seconds: request.timeoutSeconds ?? null,
        resources: buildResources(request.resourceSpec),
      },
      // Credentials (and where an upload lies) are stored only sealed, and only while the job is open.
      source_encrypted: encryptor.encrypt(JSON.stringify(request.source), jobSourceContext(id)),
      required_labels: requiredLabels,
      deadline_at: new Date(Date.now() + this.options.waitMs).toISOString(),
    };
    await insertBuildJob(db, job, now);
    bus.publish({ topic: 'build-job', deploymentId: request.deploymentId, jobId: id });
    const stored = await findBuildJob(db, id);
    if (!stored) throw new Error('build job vanished after insert');
    return stored;
  }

  /**
   * Relays the batches stored after the job's relay position. The position is the job's, not
   * this process's, and moves with the lines it relays: an engine that resumes the build
   * (after a restart or a lease taken over) goes on where the last one stopped, and of two
   * engines relaying at once only one writes a batch (the other reads the position again).
   */
  async #relayLogs(jobId: string, step: EngineStepContext): Promise<void> {
    const { db } = this.options;
    for (;;) {
      const job = await findBuildJob(db, jobId);
      if (!job) return;
      const from = { attempt: job.relayed_attempt, seq: job.relayed_seq };
      const batches = await buildJobLogsAfter(db, jobId, from);
      const last = batches.at(-1);
      if (!last) return;
      const lines = batches.flatMap((batch) => batch.lines.map((line) => ({ level: line.level as LogLevel, message: line.message })));
      const to = { attempt: last.attempt, seq: last.seq };
      if (await step.logOnce(lines, (trx) => advanceBuildJobRelay(trx, jobId, from, to))) return;
    }
  }

  /** What an ended job answers: the image, or the failure as the runner put it. */
  async #ended(job: BuildJobRecord, step: EngineStepContext): Promise<BuiltImage | null> {
    if (job.status !== 'succeeded' && job.status !== 'failed' && job.status !== 'cancelled') return null;
    await this.#relayLogs(job.id, step);
    await removeBuildJobLogs(this.options.db, job.id);
    if (job.status !== 'cancelled') await markBuildJobAnswered(this.options.db, job.id, nowIso());
    if (job.status === 'succeeded' && job.result) {
      const result = job.result as {
        image: string;
        digest: string | null;
        commit_sha: string | null;
        /** Set when the control plane answered the runner's inputs with an image built before (services/build-runners.ts). */
        reused?: { revision_id: string; seq: number; deployment_id: string };
      };
      if (result.reused)
        await step.log('INFO', reusingImageLine({ ...result.reused, image_ref: result.image }, job.deployment_id, 'the build runner built nothing'));
      const env = job.env_encrypted ? (JSON.parse(this.options.encryptor.decrypt(job.env_encrypted, jobEnvContext(job.id))) as Record<string, string>) : {};
      return { image: result.image, commitSha: result.commit_sha, id: null, digest: result.digest, env, ...(job.inputs ? { build: job.inputs } : {}) };
    }
    if (job.status === 'failed') throw new DriverError(job.error ?? 'the build runner reported a failure without a message.');
    throw new DriverError(`the build job was cancelled (${job.error ?? 'no reason given'}).`);
  }
}

const positive = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null);

/** The part of a resource_spec that sizes a build; null when it sets none of it (the runner's defaults apply). */
function buildResources(
  spec: Record<string, unknown> | null | undefined,
): { cpu: number | null; memory_mb: number | null; cpu_limit: number | null; memory_limit_mb: number | null } | null {
  if (!spec) return null;
  const memory = (value: unknown) => {
    const mb = positive(value);
    return mb === null ? null : Math.ceil(mb);
  };
  const resources = {
    cpu: positive(spec.cpu),
    memory_mb: memory(spec.memory_mb),
    cpu_limit: positive(spec.cpu_limit),
    memory_limit_mb: memory(spec.memory_limit_mb),
  };
  return Object.values(resources).every((value) => value === null) ? null : resources;
}
