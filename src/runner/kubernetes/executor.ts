import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeConfig, Log, type V1Job, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import type { RunnerJobView } from '../../contract/build-runners.js';
import { type BuildDriver, type BuildRequest, type BuiltImage, DriverError, type StepContext } from '../../engine/drivers/types.js';
import type { DriverFor } from '../job.js';
import { type ArchiveOffer, ArchiveServer } from './archive-server.js';
import type { KubernetesBuildConfig } from './config.js';
import { KubeCalls } from './kube-calls.js';
import {
  BUILD_CONTAINER,
  type BuildJobInput,
  type BuildResources,
  buildObjectName,
  buildSelector,
  type PodJob,
  renderBuildJob,
  renderBuildSecret,
} from './manifests.js';
import { parsePodLine, redactor } from './pod-lines.js';

export interface KubernetesExecutorOptions {
  /** How often the Job and its pod are read while the build waits or runs (no watch: a list is all the Role grants). */
  pollMs?: number;
  /** How long the log stream may stay open once the Job has finished, before the runner closes it. */
  logGraceMs?: number;
  /** The interface uploaded archives are served on; every one by default (build pods reach the runner's pod address). */
  archiveHost?: string;
}

/** Waiting reasons of a container that will not start by waiting longer. */
const CANNOT_START = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError']);

/** `berth builder --executor kubernetes`: each claimed job is built by a Job in the cluster (docs/build-runners.md). */
export function kubernetesDriverFor(config: KubernetesBuildConfig, kubeConfig: KubeConfig, options: KubernetesExecutorOptions = {}): DriverFor {
  // One server for all of the runner's builds; it listens only while one of them is an upload.
  const archives = config.archiveUrl ? new ArchiveServer(config.archiveUrl, config.archivePort, options.archiveHost) : undefined;
  return (job) => new KubernetesBuildDriver(config, kubeConfig, job, options, archives);
}

type Outcome = { succeeded: true } | { succeeded: false; reason: string; message: string };

/**
 * Builds one job as a Kubernetes Job: creates the Job, then its Secret (the source and push
 * credentials, owned by the Job), follows the pod's log into the build log, reads the
 * result the pod printed last, and deletes the Job and the Secret whatever happened. A
 * cancelled build (interrupted, timed out, lease lost) deletes them at once.
 */
export class KubernetesBuildDriver implements BuildDriver {
  readonly name = 'kubernetes-job';
  readonly #calls: KubeCalls;
  readonly #pollMs: number;
  readonly #logGraceMs: number;

  constructor(
    private readonly config: KubernetesBuildConfig,
    private readonly kubeConfig: KubeConfig,
    private readonly job: RunnerJobView,
    options: KubernetesExecutorOptions,
    private readonly archives?: ArchiveServer,
  ) {
    this.#calls = new KubeCalls(kubeConfig, config.namespace);
    this.#pollMs = options.pollMs ?? 2_000;
    this.#logGraceMs = options.logGraceMs ?? 10_000;
  }

  async build(request: BuildRequest, step: StepContext): Promise<BuiltImage> {
    const { job, config } = this;
    const input: BuildJobInput = {
      namespace: config.namespace,
      name: buildObjectName(job.id, job.lease_token),
      buildJobId: job.id,
      workspaceId: job.workspace_id,
      deploymentId: job.deployment_id,
      revisionId: job.revision_id,
      builderImage: config.builderImage,
      resources: this.#resources(),
      timeoutSeconds: job.build_timeout_seconds ?? config.defaultTimeoutSeconds,
      ttlSecondsAfterFinished: config.ttlSecondsAfterFinished,
      ...(config.serviceAccountName ? { serviceAccountName: config.serviceAccountName } : {}),
    };
    const offer = request.source.kind === 'archive' ? await this.#offer(request.source.path) : undefined;
    try {
      return await this.#buildAs(input, request, offer, step);
    } finally {
      await offer?.revoke();
    }
  }

  /** An uploaded archive, offered to this build's pod alone (archive-server.ts). */
  #offer(file: string): Promise<ArchiveOffer> {
    if (!this.archives)
      throw new DriverError(
        'this build runner cannot hand uploaded projects to its build pods: set BERTH_BUILDER_ARCHIVE_URL, the address build pods reach it at (docs/build-runners.md).',
      );
    return this.archives.offer(file);
  }

  async #buildAs(input: BuildJobInput, request: BuildRequest, offer: ArchiveOffer | undefined, step: StepContext): Promise<BuiltImage> {
    const podJob = this.#podJob(request, offer);
    const credentials = podJob.source.kind === 'git' ? podJob.source.credentials : null;
    const redact = redactor([
      this.job.push?.password,
      offer?.token,
      credentials?.kind === 'basic' ? credentials.password : undefined,
      ...(credentials?.kind === 'ssh-key' ? credentials.private_key.split('\n').filter((line) => !line.startsWith('-----')) : []),
    ]);
    await this.#removeEarlier(input.name, step.signal);
    try {
      const applied = await this.#calls.apply(renderBuildJob(input), step.signal);
      await this.#calls.apply<V1Secret>(renderBuildSecret(input, podJob, applied), step.signal);
      await step.log('INFO', `Building in Kubernetes: Job ${input.namespace}/${input.name}`);
      return await this.#run(input, step, redact);
    } finally {
      await this.#cleanUp(input.name, step);
    }
  }

  #resources(): BuildResources {
    const asked = this.job.resources;
    const cpu = asked?.cpu ?? this.config.defaultCpu;
    const memoryMb = asked?.memory_mb ?? this.config.defaultMemoryMb;
    // As for revisions on this machine (domain/deployment-config.ts localLimits): twice the request unless a limit is given.
    return { cpu, memoryMb, cpuLimit: asked?.cpu_limit ?? cpu * 2, memoryLimitMb: asked?.memory_limit_mb ?? memoryMb * 2 };
  }

  #podJob(request: BuildRequest, offer: ArchiveOffer | undefined): PodJob {
    return {
      image: this.job.image,
      graph_config_path: request.graphConfigPath,
      install_command: request.installCommand,
      build_command: request.buildCommand,
      workspace_id: request.workspaceId,
      deployment_id: request.deploymentId,
      deployment_name: request.deploymentName,
      revision_id: request.revisionId,
      source: podSource(request.source, offer),
      push: this.job.push,
    };
  }

  /** Waits for the pod, relays its log, then reads how the Job ended. */
  async #run(input: BuildJobInput, step: StepContext, redact: (line: string) => string): Promise<BuiltImage> {
    const state = { result: undefined as BuiltImage | undefined, lastError: undefined as string | undefined, since: '' };
    const pod = await this.#startedPod(input, step.signal);
    if (pod) await this.#relayLog(input, pod, step, redact, state);
    const outcome = await this.#outcome(input, step.signal);
    if (!outcome.succeeded) {
      if (outcome.reason === 'DeadlineExceeded')
        throw new DriverError(`the build took longer than ${input.timeoutSeconds} s (build_timeout_seconds) and Kubernetes stopped its Job.`);
      throw new DriverError(state.lastError ?? `the build's Job failed (${outcome.reason}: ${outcome.message}).`);
    }
    if (!state.result) throw new DriverError("the build's pod finished without reporting an image: its log ended early (see the build log).");
    if (state.result.image !== this.job.image) throw new DriverError(`the build's pod reported image ${state.result.image}, not ${this.job.image}.`);
    return state.result;
  }

  /** The Job's pod once it runs or has run; undefined when the Job ended without one running (its deadline passed while pending). */
  async #startedPod(input: BuildJobInput, signal: AbortSignal): Promise<string | undefined> {
    for (;;) {
      // The Job before its pods: a Job found finished then has its pod's last state in the list read after.
      const finished = jobOutcome(await this.#job(input, signal));
      const [pod] = await this.#calls.list<V1Pod>('v1', 'Pod', `job-name=${input.name}`, signal);
      const phase = pod?.status?.phase;
      if (pod?.metadata?.name && (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed')) return pod.metadata.name;
      const waiting = pod?.status?.containerStatuses?.find((status) => CANNOT_START.has(status.state?.waiting?.reason ?? ''))?.state?.waiting;
      if (waiting) {
        throw new DriverError(
          `the builder pod cannot start (${waiting.reason}: ${waiting.message ?? 'no details'}): check BERTH_BUILDER_IMAGE (${input.builderImage}) and that the cluster may pull it.`,
        );
      }
      if (finished) return undefined;
      await sleep(this.#pollMs, undefined, { signal });
    }
  }

  /**
   * Follows the pod's log with timestamps; when the stream ends while the pod still runs (a
   * dropped connection), follows again from the last line's time, skipping what was relayed.
   */
  async #relayLog(
    input: BuildJobInput,
    pod: string,
    step: StepContext,
    redact: (line: string) => string,
    state: { result: BuiltImage | undefined; lastError: string | undefined; since: string },
  ): Promise<void> {
    for (;;) {
      const stream = new PassThrough();
      let controller: AbortController | undefined;
      const close = () => {
        controller?.abort();
        stream.destroy();
      };
      step.signal.addEventListener('abort', close, { once: true });
      const watchdog = this.#closeWhenDone(input, stream, step.signal);
      const relay = async (raw: string) => {
        const space = raw.indexOf(' ');
        const stamp = raw.slice(0, space);
        if (state.since && stamp <= state.since) return;
        state.since = stamp;
        const line = parsePodLine(raw.slice(space + 1));
        if (line.kind === 'result') state.result = line.result;
        else {
          const message = redact(line.message);
          if (line.level === 'ERROR') state.lastError = message;
          await step.log(line.level, message);
        }
      };
      try {
        // Lines are relayed in order; the stream ends (the container exited), is ended by the watchdog, or is destroyed on abort.
        const ended = new Promise<void>((resolve, reject) => {
          let relayed = Promise.resolve();
          const lines = createInterface({ input: stream, crlfDelay: Infinity });
          lines.on('line', (raw) => (relayed = relayed.then(() => relay(raw))));
          const finish = () => void relayed.then(resolve, reject);
          lines.once('close', finish);
          stream.once('close', finish);
          stream.once('error', finish);
        });
        const aborted = step.signal.aborted ? Promise.resolve(undefined) : once(step.signal, 'abort').then(() => undefined);
        const logging = new Log(this.kubeConfig).log(this.config.namespace, pod, BUILD_CONTAINER, stream, {
          follow: true,
          timestamps: true,
          ...(state.since ? { sinceTime: state.since.replace(/\.\d+Z$/, 'Z') } : {}),
        });
        // An abort ends each wait itself: the log request may not have answered yet, and a destroyed stream does not always say so to readline.
        controller = await Promise.race([logging, aborted]);
        if (!controller)
          void logging.then(
            (late) => late.abort(),
            () => {},
          );
        if (step.signal.aborted) close();
        await Promise.race([ended, aborted]);
      } catch (error) {
        if (step.signal.aborted) throw error;
        await step.log('WARNING', `Reading the build pod's log failed (${redact((error as Error).message)}); reading it again.`);
      } finally {
        controller?.abort();
        watchdog.abort();
        step.signal.removeEventListener('abort', close);
      }
      step.signal.throwIfAborted();
      const current = await this.#calls.read<V1Pod>('v1', 'Pod', pod, step.signal);
      if (!current || current.status?.phase === 'Succeeded' || current.status?.phase === 'Failed') return;
      if (jobOutcome(await this.#job(input, step.signal))) return;
      await sleep(this.#pollMs, undefined, { signal: step.signal });
    }
  }

  /** Ends the log stream once the Job has finished and the grace has passed: a follow the server never closes must not hold the build. */
  #closeWhenDone(input: BuildJobInput, stream: PassThrough, signal: AbortSignal): AbortController {
    const done = new AbortController();
    const bound = AbortSignal.any([signal, done.signal]);
    void (async () => {
      try {
        while (!jobOutcome(await this.#job(input, bound))) await sleep(this.#pollMs, undefined, { signal: bound });
        await sleep(this.#logGraceMs, undefined, { signal: bound });
        stream.end();
      } catch {
        // Stopped, or the API could not be read: the stream's own end decides.
      }
    })();
    return done;
  }

  async #outcome(input: BuildJobInput, signal: AbortSignal): Promise<Outcome> {
    for (;;) {
      const job = await this.#job(input, signal);
      if (!job) return { succeeded: false, reason: 'Deleted', message: 'the Job was deleted before it finished' };
      const outcome = jobOutcome(job);
      if (outcome) return outcome;
      await sleep(this.#pollMs, undefined, { signal });
    }
  }

  #job(input: BuildJobInput, signal: AbortSignal): Promise<V1Job | undefined> {
    return this.#calls.read<V1Job>('batch/v1', 'Job', input.name, signal);
  }

  /** Jobs of this build job another claim left (a runner that died): they would push over this build. */
  async #removeEarlier(name: string, signal: AbortSignal): Promise<void> {
    for (const earlier of await this.#calls.list<V1Job>('batch/v1', 'Job', buildSelector(this.job.id), signal)) {
      const earlierName = earlier.metadata?.name;
      if (earlierName && earlierName !== name) {
        await this.#calls.delete('batch/v1', 'Job', earlierName, signal);
        await this.#calls.delete('v1', 'Secret', earlierName, signal);
      }
    }
  }

  /** Never fails the build: the Job's time-to-live and the Secret's owner reference remove what a failed delete leaves. */
  async #cleanUp(name: string, step: StepContext): Promise<void> {
    const signal = AbortSignal.timeout(30_000);
    for (const [apiVersion, kind] of [
      ['batch/v1', 'Job'],
      ['v1', 'Secret'],
    ] as const) {
      try {
        await this.#calls.delete(apiVersion, kind, name, signal);
      } catch (error) {
        await step.log('WARNING', `Could not delete the build's ${kind} ${this.config.namespace}/${name}: ${(error as Error).message}`).catch(() => {});
      }
    }
  }
}

function podSource(source: BuildRequest['source'], offer: ArchiveOffer | undefined): PodJob['source'] {
  if (source.kind === 'archive') {
    if (!offer) throw new DriverError('the uploaded archive was not offered to the build pod.');
    return { kind: 'archive', url: offer.url, sha256: offer.sha256 };
  }
  const auth = source.auth;
  return {
    kind: 'git',
    url: source.url,
    ref: source.ref,
    credentials: !auth
      ? null
      : auth.kind === 'basic'
        ? { kind: 'basic', username: auth.username, password: auth.password }
        : { kind: 'ssh-key', private_key: auth.privateKey, ...(auth.knownHosts ? { known_hosts: auth.knownHosts } : {}) },
  };
}

/** How a Job ended, from its conditions (or counts, for a controller that has not set them yet); undefined while it runs. */
export function jobOutcome(job: V1Job | undefined): Outcome | undefined {
  if (!job) return undefined;
  const conditions = job.status?.conditions ?? [];
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True');
  if (failed) return { succeeded: false, reason: failed.reason ?? 'Failed', message: failed.message ?? 'no details' };
  if (conditions.some((c) => c.type === 'Complete' && c.status === 'True')) return { succeeded: true };
  if ((job.status?.failed ?? 0) > 0) return { succeeded: false, reason: 'Failed', message: 'its pod failed' };
  if ((job.status?.succeeded ?? 0) > 0) return { succeeded: true };
  return undefined;
}
