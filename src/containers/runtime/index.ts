import { isIP } from 'node:net';
import { removeLocalImage } from '../../image-builds/forget-image.js';
import { DriverError, type ImageToForget, type RunningRevision, type RunRequest, type RuntimeDriver, type StepContext } from '../driver.js';
import type { ContainerRuntimeKind, ResolvedRuntime } from '../detect.js';
import {
  CONTAINER_PORT,
  containerExists,
  containersLabelled,
  containersOf,
  type LabelledContainer,
  removeContainers,
  runContainer,
  startContainer,
} from './containers.js';
import { detectRuntime } from '../detect.js';
import { waitHealthy } from './health.js';
import { ensureImage } from './image.js';
import { blamedGraphs, describeGraphs, type ExpectedGraph, expectedGraphs, quoteLines } from './graphs.js';
import { captureLogs, secretValues } from './logs.js';
import { freePort } from './ports.js';
import { containerName, describeLimits, isContainerName, validateRequest } from './request.js';
import { PORT_LABEL, SETTINGS_LABEL, parkContainer, removeExpiredStandbys, settingsLabel, type StandbyPolicy, takeStandby } from './standby.js';
import { errorMessage, formatSeconds, safeLog } from './step.js';

export type { ContainerRuntimeKind, ResolvedRuntime } from '../detect.js';
export type { LabelledContainer } from './containers.js';

export interface LocalContainerRuntimeOptions {
  /** Which runtime to use; `auto` (the default) prefers podman, then docker. */
  runtime?: ContainerRuntimeKind | 'auto';
  /**
   * The host address containers are published on: 127.0.0.1 (the default) keeps them to
   * this machine; a listener agent serving users elsewhere publishes on 0.0.0.0 or one
   * interface's address. Health checks and the returned URL use loopback for a wildcard.
   */
  publishAddress?: string;
  /**
   * How long a started container has to answer `GET /ok` with 200; null waits until the
   * step is aborted (the engine's per-deployment deploy timeout then decides).
   */
  healthTimeoutMs?: number | null;
  /** Environment for finding and running the runtime (PATH, CONTAINERS_CONF, DOCKER_HOST…). */
  env?: NodeJS.ProcessEnv;
  /**
   * `bridge` (default): each container in its own network, published on a loopback port.
   * `host`: containers share the host's network and listen on a free port of it, so they
   * reach services that listen on the host's loopback only (per-deployment databases).
   */
  network?: ContainerNetwork;
  /**
   * Replaced containers kept paused for a rollback (standby.ts); off (the listener agent's
   * case) unless given with a positive `keepMs`.
   */
  standby?: StandbyPolicy;
}

export type ContainerNetwork = 'bridge' | 'host';

/**
 * A container that never became healthy: which graphs its output blames (a module that
 * throws at import stops the LangGraph.js server before it answers GET /ok) and its last
 * lines, so the revision's status message says what to fix without opening the logs.
 */
function explainStartFailure(error: unknown, lines: string[], graphs: ExpectedGraph[], secrets: string[]): unknown {
  if (!(error instanceof DriverError) || lines.length === 0) return error;
  const blamed = blamedGraphs(lines, graphs);
  const which = blamed.length > 0 ? `The graph(s) ${describeGraphs(blamed)} of the configuration failed to load. ` : '';
  return new DriverError(`${which}${error.message}\nThe container's last lines:\n${quoteLines(lines, secrets)}`);
}

const DEFAULT_HEALTH_TIMEOUT_MS = 60_000;

/** Pulls the image unless present, and reads its graphs; a pulled image's are read once it is there. */
async function imageAndGraphs(runtime: ResolvedRuntime, request: RunRequest, context: StepContext): Promise<ExpectedGraph[]> {
  const of = { image: request.image, env: request.env };
  const [pulled, graphs] = await Promise.all([ensureImage(runtime, request.image, context, request.pull), expectedGraphs(runtime, of)]);
  return pulled ? expectedGraphs(runtime, of) : graphs;
}

/**
 * Runs image revisions as containers on this machine with podman or docker, on a port of
 * 127.0.0.1 (or the address it is given), and checks `GET /ok` before reporting them running.
 *
 * Secrets reach the container through a 0600 env file (or, for multi-line values, through the
 * runtime process's own environment by name); they never appear in argv, logs or errors.
 */
export class LocalContainerRuntime implements RuntimeDriver {
  readonly name = 'local-container';
  private readonly preference: ContainerRuntimeKind | 'auto';
  /** Where ports are published. */
  private readonly publishAddress: string;
  /** Where this process reaches them (loopback for a wildcard address). */
  private readonly host: string;
  private readonly healthTimeoutMs: number | null;
  private readonly baseEnv: NodeJS.ProcessEnv;
  private readonly network: ContainerNetwork;
  private readonly standby: StandbyPolicy | null;
  private resolved: ResolvedRuntime | null = null;
  private resolving: Promise<ResolvedRuntime | string> | undefined;

  constructor(options: LocalContainerRuntimeOptions = {}) {
    this.preference = options.runtime ?? 'auto';
    this.publishAddress = options.publishAddress ?? '127.0.0.1';
    if (isIP(this.publishAddress) !== 4) throw new Error(`publishAddress must be an IPv4 address, not '${this.publishAddress}'`);
    this.host = this.publishAddress === '0.0.0.0' ? '127.0.0.1' : this.publishAddress;
    this.healthTimeoutMs = options.healthTimeoutMs === undefined ? DEFAULT_HEALTH_TIMEOUT_MS : options.healthTimeoutMs;
    this.baseEnv = options.env ?? process.env;
    this.network = options.network ?? 'bridge';
    this.standby = options.standby && options.standby.keepMs > 0 ? { ...options.standby, perDeployment: Math.max(1, options.standby.perDeployment) } : null;
  }

  async unavailableReason(): Promise<string | null> {
    const outcome = await this.resolve();
    return typeof outcome === 'string' ? outcome : null;
  }

  async start(request: RunRequest, context: StepContext): Promise<RunningRevision> {
    const runtime = await this.requireRuntime();
    validateRequest(request);
    const secrets = secretValues(request.env);
    const name = containerName(request.instanceName, request.revisionId);
    // Each runtime command is a process of its own (a tenth of a second, more on a busy
    // machine): those that do not depend on one another run side by side. A standby's image
    // is present, so checking for it first costs a resumed standby nothing.
    const imageReady = imageAndGraphs(runtime, request, context);
    imageReady.catch(() => undefined);
    // A process that died mid-start (and whose lease was taken over) may have left this very container.
    if (await containerExists(runtime, name)) {
      await context.log('WARNING', `Removing container ${name} left over from an earlier attempt at this revision`);
      await removeContainers(runtime, [name]);
    }
    if (this.standby) {
      const resumed = await this.resumeStandby(runtime, request, name, context);
      if (resumed) {
        await imageReady.catch(() => undefined);
        return resumed;
      }
    }
    const graphs = await imageReady;

    const port = await freePort(this.publishAddress);
    const url = `http://${this.host}:${port}`;
    const env = { ...request.env };
    if ('PORT' in env) {
      await context.log('WARNING', `PORT is set by the runtime (${CONTAINER_PORT}); the deployment's own PORT value is ignored`);
      delete env.PORT;
    }
    env.PORT = String(this.network === 'host' ? port : CONTAINER_PORT);
    // On the host's network, servers that honour HOST (the agent-server images do) stay on loopback.
    if (this.network === 'host') env.HOST ??= this.publishAddress;

    const limits = describeLimits(request.resources);
    await context.log('INFO', `Starting container ${name} from ${request.image} on ${this.publishAddress}:${port}${limits ? ` (${limits})` : ''}`);
    const startedAt = Date.now();
    let created = false;
    try {
      const labels = { [PORT_LABEL]: String(port), [SETTINGS_LABEL]: settingsLabel(request) };
      await runContainer(runtime, request, { name, host: this.publishAddress, port, env, network: this.network, labels }, context);
      created = true;
      const limit = this.healthTimeoutMs === null ? "until the deploy step's timeout" : `up to ${formatSeconds(this.healthTimeoutMs)}`;
      await context.log('INFO', `Waiting for GET /ok on port ${port} (${limit})`);
      await waitHealthy(runtime, name, url, port, this.healthTimeoutMs, context, graphs);
    } catch (error) {
      // The run command may have created the container even when it failed or was aborted.
      const lines = await captureLogs(runtime, name, secrets, context, created);
      await removeContainers(runtime, [name]).catch(async (removeError: unknown) => {
        await safeLog(context, 'ERROR', `Could not remove container ${name}: ${errorMessage(removeError)}`);
      });
      throw created ? explainStartFailure(error, lines, graphs, secrets) : error;
    }
    await context.log('INFO', `Healthy after ${formatSeconds(Date.now() - startedAt)}: ${url}/ok answered 200`);
    return { url, handle: name };
  }

  async retire(handle: string, context: StepContext): Promise<void> {
    const runtime = await this.requireRuntime();
    if (!isContainerName(handle)) throw new DriverError(`Cannot retire '${handle}': it is not a container name this runtime created`);
    await context.log('INFO', `Removing container ${handle}`);
    await removeContainers(runtime, [handle]);
  }

  /**
   * Retires a replaced instance: with standbys on, pauses it for a quick rollback instead
   * (true); false when it was removed.
   */
  async park(handle: string, context: StepContext): Promise<boolean> {
    if (!this.standby) {
      await this.retire(handle, context);
      return false;
    }
    const runtime = await this.requireRuntime();
    if (!isContainerName(handle)) throw new DriverError(`Cannot retire '${handle}': it is not a container name this runtime created`);
    return parkContainer(runtime, handle, this.standby, context);
  }

  /** Removes standby containers whose time has ended (also those of a Berth that stopped); their names. */
  async sweepStandbys(): Promise<string[]> {
    const outcome = await this.resolve();
    if (typeof outcome === 'string') return [];
    return removeExpiredStandbys(outcome);
  }

  /** The revision's standby, unpaused and checked like a new container; null to start one. */
  private async resumeStandby(runtime: ResolvedRuntime, request: RunRequest, name: string, context: StepContext): Promise<RunningRevision | null> {
    const startedAt = Date.now();
    const taken = await takeStandby(runtime, request, name, context);
    if (!taken) return null;
    const url = `http://${this.host}:${taken.port}`;
    await context.log('INFO', `Unpaused a standby container (same image and environment), now ${name}, on ${this.host}:${taken.port}`);
    try {
      const graphs = await expectedGraphs(runtime, { image: request.image, env: request.env });
      await waitHealthy(runtime, name, url, taken.port, this.healthTimeoutMs, context, graphs);
    } catch (error) {
      await safeLog(context, 'WARNING', `The standby container did not become healthy again (${errorMessage(error)}); removing it and starting a new one`);
      await removeContainers(runtime, [name]);
      if (context.signal.aborted) throw error;
      return null;
    }
    await context.log('INFO', `Healthy after ${formatSeconds(Date.now() - startedAt)}, without starting a container: ${url}/ok answered 200`);
    return { url, handle: name };
  }

  async teardown(deploymentId: string, context: StepContext): Promise<void> {
    const runtime = await this.requireRuntime();
    const names = await containersOf(runtime, deploymentId);
    if (names.length === 0) {
      await context.log('INFO', `No containers to remove for deployment ${deploymentId}`);
      return;
    }
    await context.log('INFO', `Removing ${names.length} container(s) of deployment ${deploymentId}: ${names.join(', ')}`);
    await removeContainers(runtime, names);
  }

  async forgetImage(image: ImageToForget): Promise<void> {
    if (image.id === null) return;
    const runtime = await this.requireRuntime();
    await removeLocalImage({ kind: runtime.kind, binary: runtime.binary, env: runtime.env }, image.image, image.id);
  }

  /** Every container carrying `label=value` (running or stopped): what runs here, after a restart too. */
  async listLabelled(label: string, value: string): Promise<LabelledContainer[]> {
    return containersLabelled(await this.requireRuntime(), label, value);
  }

  /**
   * Starts a stopped container this runtime created (a host reboot stops them) on the port it
   * had, and waits until it answers `GET /ok` again.
   */
  async resume(container: LabelledContainer, context: StepContext): Promise<RunningRevision> {
    const runtime = await this.requireRuntime();
    if (!isContainerName(container.name)) throw new DriverError(`Cannot start '${container.name}': it is not a container name this runtime created`);
    if (container.hostPort === null) throw new DriverError(`Cannot start ${container.name} again: it publishes no port on ${this.host}`);
    const url = `http://${this.host}:${container.hostPort}`;
    await context.log('INFO', `Starting stopped container ${container.name} again on ${this.host}:${container.hostPort}`);
    await startContainer(runtime, container.name, context.signal);
    const graphs = await expectedGraphs(runtime, { container: container.name });
    await waitHealthy(runtime, container.name, url, container.hostPort, this.healthTimeoutMs, context, graphs);
    return { url, handle: container.name };
  }

  /** The runtime in use, for tests and diagnostics; null when none answers. */
  async resolvedRuntime(): Promise<ResolvedRuntime | null> {
    const outcome = await this.resolve();
    return typeof outcome === 'string' ? null : outcome;
  }

  private async requireRuntime(): Promise<ResolvedRuntime> {
    const outcome = await this.resolve();
    if (typeof outcome === 'string') throw new DriverError(outcome);
    return outcome;
  }

  /**
   * Only success is cached, so installing a runtime later needs no restart; a runtime that
   * breaks later reports its own errors on the next command.
   */
  private async resolve(): Promise<ResolvedRuntime | string> {
    if (this.resolved) return this.resolved;
    // Steps started together share one probe instead of queueing several on the store's lock.
    this.resolving ??= detectRuntime(this.preference, this.baseEnv).finally(() => (this.resolving = undefined));
    const outcome = await this.resolving;
    if (typeof outcome !== 'string') this.resolved = outcome;
    return outcome;
  }
}
