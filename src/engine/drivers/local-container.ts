import { execFile } from 'node:child_process';
import { existsSync, constants as fsConstants } from 'node:fs';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DriverError, type LogLevel, type RunningRevision, type RunRequest, type RuntimeDriver, type StepContext } from './types.js';

export type ContainerRuntimeKind = 'podman' | 'docker';

export interface LocalContainerRuntimeOptions {
  /** Which runtime to use; `auto` (the default) prefers podman, then docker. */
  runtime?: ContainerRuntimeKind | 'auto';
  /** Containers are published on this address of the host; only loopback is allowed. */
  host?: '127.0.0.1';
  /**
   * How long a started container has to answer `GET /ok` with 200; null waits until the
   * step is aborted (the engine's per-deployment deploy timeout then decides).
   */
  healthTimeoutMs?: number | null;
  /** Environment for finding and running the runtime (PATH, CONTAINERS_CONF, DOCKER_HOST…). */
  env?: NodeJS.ProcessEnv;
}

/** Written by scripts/setup-containers.sh; used when the environment does not name another. */
export const BERTH_CONTAINERS_CONF = '/etc/berth/containers.conf';
export const BERTH_REGISTRIES_CONF = '/etc/berth/registries.conf';

export const DEPLOYMENT_LABEL = 'berth.deployment';
export const REVISION_LABEL = 'berth.revision';

const DEFAULT_HEALTH_TIMEOUT_MS = 60_000;
const INFO_TIMEOUT_MS = 10_000;
const COMMAND_TIMEOUT_MS = 60_000;
const PULL_TIMEOUT_MS = 10 * 60_000;
const PROBE_TIMEOUT_MS = 2_000;
const LOG_TAIL_LINES = 50;
const MAX_ENV_FILE_VALUE = 16 * 1024;
/** Ports handed out recently by this process, so concurrent starts never share one. */
const PORT_RESERVATION_MS = 5 * 60_000;
/** Where the agent server listens inside its container (the agent-server images' default); set as PORT. */
export const CONTAINER_PORT = 8000;
const reservedPorts = new Map<number, number>();
/** Shorter values are too likely to be ordinary words ("true", "info") to redact from logs. */
const MIN_REDACTED_LENGTH = 8;
/** States (podman's and docker's) in which a container may still come to answer. */
const STARTING_STATES = new Set(['created', 'configured', 'initialized', 'running']);
const LISTENER_HINT = 'or place the deployment on a listener (source_config.listener_id) instead of the local runtime';

export interface ResolvedRuntime {
  kind: ContainerRuntimeKind;
  binary: string;
  env: NodeJS.ProcessEnv;
}

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
  /** Set when the command could not run at all (missing binary, killed by timeout or signal). */
  failure?: 'not-found' | 'timeout' | 'aborted' | 'error';
}

interface CommandOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Added to the runtime's environment for this command only. */
  extraEnv?: Record<string, string>;
}

/**
 * Runs image revisions as containers on this machine with podman or docker, on a port of
 * 127.0.0.1, and checks `GET /ok` before reporting them running.
 *
 * Secrets reach the container through a 0600 env file (or, for multi-line values, through the
 * runtime process's own environment by name); they never appear in argv, logs or errors.
 */
export class LocalContainerRuntime implements RuntimeDriver {
  readonly name = 'local-container';
  private readonly preference: ContainerRuntimeKind | 'auto';
  private readonly host: '127.0.0.1';
  private readonly healthTimeoutMs: number | null;
  private readonly baseEnv: NodeJS.ProcessEnv;
  private resolved: ResolvedRuntime | null = null;

  constructor(options: LocalContainerRuntimeOptions = {}) {
    this.preference = options.runtime ?? 'auto';
    this.host = options.host ?? '127.0.0.1';
    if (this.host !== '127.0.0.1') throw new Error('LocalContainerRuntime only serves on 127.0.0.1');
    this.healthTimeoutMs = options.healthTimeoutMs === undefined ? DEFAULT_HEALTH_TIMEOUT_MS : options.healthTimeoutMs;
    this.baseEnv = options.env ?? process.env;
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

    // A process that died mid-start (and whose lease was taken over) may have left this very container.
    if (await this.exists(runtime, name)) {
      await context.log('WARNING', `Removing container ${name} left over from an earlier attempt at this revision`);
      await this.remove(runtime, [name]);
    }

    await this.ensureImage(runtime, request.image, context);

    const port = await freePort(this.host);
    const url = `http://${this.host}:${port}`;
    const env = { ...request.env };
    if ('PORT' in env) {
      await context.log('WARNING', `PORT is set by the runtime (${CONTAINER_PORT}); the deployment's own PORT value is ignored`);
      delete env.PORT;
    }
    env.PORT = String(CONTAINER_PORT);

    const limits = describeLimits(request.resources);
    await context.log('INFO', `Starting container ${name} from ${request.image} on ${this.host}:${port}${limits ? ` (${limits})` : ''}`);
    const startedAt = Date.now();
    let created = false;
    try {
      await this.runContainer(runtime, request, name, env, port, context);
      created = true;
      const limit = this.healthTimeoutMs === null ? "until the deploy step's timeout" : `up to ${formatSeconds(this.healthTimeoutMs)}`;
      await context.log('INFO', `Waiting for GET /ok on port ${port} (${limit})`);
      await this.waitHealthy(runtime, name, url, port, context);
    } catch (error) {
      // The run command may have created the container even when it failed or was aborted.
      await this.captureLogs(runtime, name, secrets, context, created);
      await this.remove(runtime, [name]).catch(async (removeError: unknown) => {
        await safeLog(context, 'ERROR', `Could not remove container ${name}: ${errorMessage(removeError)}`);
      });
      throw error;
    }
    await context.log('INFO', `Healthy after ${formatSeconds(Date.now() - startedAt)}: ${url}/ok answered 200`);
    return { url, handle: name };
  }

  async retire(handle: string, context: StepContext): Promise<void> {
    const runtime = await this.requireRuntime();
    if (!isContainerName(handle)) throw new DriverError(`Cannot retire '${handle}': it is not a container name this runtime created`);
    await context.log('INFO', `Removing container ${handle}`);
    await this.remove(runtime, [handle]);
  }

  async teardown(deploymentId: string, context: StepContext): Promise<void> {
    const runtime = await this.requireRuntime();
    const names = await this.containersOf(runtime, deploymentId);
    if (names.length === 0) {
      await context.log('INFO', `No containers to remove for deployment ${deploymentId}`);
      return;
    }
    await context.log('INFO', `Removing ${names.length} container(s) of deployment ${deploymentId}: ${names.join(', ')}`);
    await this.remove(runtime, names);
  }

  /** Names of every container (running or not) labelled with the deployment. */
  private async containersOf(runtime: ResolvedRuntime, deploymentId: string): Promise<string[]> {
    const result = await this.run(runtime, ['ps', '-a', '--filter', `label=${DEPLOYMENT_LABEL}=${deploymentId}`, '--format', '{{.Names}}']);
    if (result.code !== 0) {
      throw new DriverError(`Could not list the containers of deployment ${deploymentId}: \`${runtime.kind} ps\` failed: ${lastLine(result)}`);
    }
    return result.stdout.split('\n').map((line) => line.trim()).filter(Boolean);
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
    const kinds: ContainerRuntimeKind[] = this.preference === 'auto' ? ['podman', 'docker'] : [this.preference];
    const problems: string[] = [];
    for (const kind of kinds) {
      const binary = await findOnPath(kind, this.baseEnv.PATH);
      if (!binary) continue;
      const runtime: ResolvedRuntime = { kind, binary, env: runtimeEnv(kind, this.baseEnv) };
      const info = await this.run(runtime, ['info', '--format', kind === 'podman' ? '{{.Host.OCIRuntime.Name}}' : '{{.ServerVersion}}'], {
        timeoutMs: INFO_TIMEOUT_MS,
      });
      if (info.code === 0) {
        this.resolved = runtime;
        return runtime;
      }
      const why = info.failure === 'timeout' ? `did not answer within ${formatSeconds(INFO_TIMEOUT_MS)}` : `failed: ${lastLine(info)}`;
      problems.push(`${kind} is installed (${binary}) but \`${kind} info\` ${why}`);
    }
    const install =
      this.preference === 'docker'
        ? 'Install Docker (apt-get install docker.io) and start its daemon'
        : this.preference === 'podman'
          ? 'Install podman (apt-get install podman, then run scripts/setup-containers.sh)'
          : 'Install podman (apt-get install podman, then run scripts/setup-containers.sh) or Docker';
    if (problems.length === 0) {
      const missing = kinds.length > 1 ? `neither ${kinds.join(' nor ')} is on PATH` : `${kinds[0]} is not on PATH`;
      return `No container runtime found: ${missing}. ${install}, ${LISTENER_HINT}.`;
    }
    return `No working container runtime: ${problems.join('; ')}. ${install}, ${LISTENER_HINT}.`;
  }

  private async exists(runtime: ResolvedRuntime, name: string): Promise<boolean> {
    const result = await this.run(runtime, ['container', 'inspect', '--format', '{{.Name}}', name]);
    return result.code === 0;
  }

  private async ensureImage(runtime: ResolvedRuntime, image: string, context: StepContext): Promise<void> {
    const present =
      runtime.kind === 'podman'
        ? await this.run(runtime, ['image', 'exists', image], { signal: context.signal })
        : await this.run(runtime, ['image', 'inspect', '--format', '{{.Id}}', image], { signal: context.signal });
    throwIfAborted(context.signal, `checking image ${image}`);
    if (present.code === 0) {
      await context.log('INFO', `Image ${image} is present locally`);
      return;
    }
    await context.log('INFO', `Image ${image} is not present locally; pulling it`);
    const startedAt = Date.now();
    const pulled = await this.run(runtime, ['pull', image], { signal: context.signal, timeoutMs: PULL_TIMEOUT_MS });
    throwIfAborted(context.signal, `pulling image ${image}`);
    if (pulled.code !== 0) {
      const why = pulled.failure === 'timeout' ? `the pull did not finish within ${formatSeconds(PULL_TIMEOUT_MS)}` : lastLine(pulled);
      await safeLog(context, 'ERROR', `Pulling ${image} failed: ${why}`);
      throw new DriverError(
        `Image '${image}' was not found locally and could not be pulled: ${why}. ` +
          'Check the image name and tag, and that its registry is reachable from this machine ' +
          `(a registry without TLS, such as one on 127.0.0.1:5000, must be marked insecure in ${BERTH_REGISTRIES_CONF} or CONTAINERS_REGISTRIES_CONF).`,
      );
    }
    await context.log('INFO', `Pulled ${image} in ${formatSeconds(Date.now() - startedAt)}`);
  }

  private async runContainer(
    runtime: ResolvedRuntime,
    request: RunRequest,
    name: string,
    env: Record<string, string>,
    port: number,
    context: StepContext,
  ): Promise<void> {
    // Env files hold one line per variable and their readers cap line length (64 KiB), so such
    // values go by name through the runtime process's environment (`--env NAME` copies the value
    // from there); neither way puts a value in argv.
    const fileLines: string[] = [];
    const byName: Record<string, string> = {};
    for (const [key, value] of Object.entries(env)) {
      if (/[\r\n]/.test(value) || value.length > MAX_ENV_FILE_VALUE) byName[key] = value;
      else fileLines.push(`${key}=${value}`);
    }
    for (const key of Object.keys(byName)) {
      if (key in runtime.env) {
        throw new DriverError(
          `The value of ${key} cannot go in an env file (it spans several lines or is longer than ${MAX_ENV_FILE_VALUE / 1024} KiB), ` +
            `and ${key} is also a variable of the container runtime's own environment, so it cannot be passed safely. Rename the variable or encode its value on one line (e.g. base64).`,
        );
      }
    }

    const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-env-'));
    const envFile = path.join(dir, 'env');
    try {
      await writeFile(envFile, `${fileLines.join('\n')}\n`, { mode: 0o600, flag: 'wx' });
      const args = [
        'run',
        '-d',
        '--name',
        name,
        '--label',
        `${DEPLOYMENT_LABEL}=${request.deploymentId}`,
        '--label',
        `${REVISION_LABEL}=${request.revisionId}`,
        // Published on loopback only: whatever address the server binds inside its own
        // network namespace, nothing outside this machine can reach it.
        '--network',
        'bridge',
        '--publish',
        `${this.host}:${port}:${CONTAINER_PORT}`,
        '--pull',
        'never',
        '--env-file',
        envFile,
        ...Object.keys(byName).flatMap((key) => ['--env', key]),
      ];
      if (request.resources.cpu !== undefined) args.push('--cpus', String(request.resources.cpu));
      if (request.resources.memoryMb !== undefined) args.push('--memory', `${request.resources.memoryMb}m`);
      args.push(request.image);

      const result = await this.run(runtime, args, {
        signal: context.signal,
        timeoutMs: COMMAND_TIMEOUT_MS,
        extraEnv: byName,
      });
      throwIfAborted(context.signal, `starting container ${name}`);
      if (result.code !== 0) {
        const why = redact(result.failure === 'timeout' ? `it did not return within ${formatSeconds(COMMAND_TIMEOUT_MS)}` : lastLine(result), secretValues(env));
        await safeLog(context, 'ERROR', `\`${runtime.kind} run\` failed: ${why}`);
        throw new DriverError(
          `Could not start a container from image '${request.image}': \`${runtime.kind} run\` failed: ${why}. ` +
            (runtime.kind === 'podman'
              ? `Check that podman is configured for this machine (run scripts/setup-containers.sh and set CONTAINERS_CONF=${BERTH_CONTAINERS_CONF}).`
              : 'Check the Docker daemon and the image.'),
        );
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async waitHealthy(runtime: ResolvedRuntime, name: string, url: string, port: number, context: StepContext): Promise<void> {
    const deadline = this.healthTimeoutMs === null ? Number.POSITIVE_INFINITY : Date.now() + this.healthTimeoutMs;
    const startedAt = Date.now();
    let lastProblem = 'no answer yet';
    let nextProgressAt = startedAt + 10_000;
    let delayMs = 100;
    for (;;) {
      throwIfAborted(context.signal, `waiting for GET /ok on port ${port}`);
      const probe = await probeOk(`${url}/ok`, context.signal);
      // Another process could have taken the port between allocation and the container's bind;
      // a 200 only counts while our container is the one still running.
      if (probe === 200 && (await this.state(runtime, name))?.status === 'running') return;
      lastProblem = typeof probe === 'number' ? `HTTP ${probe}` : probe;
      throwIfAborted(context.signal, `waiting for GET /ok on port ${port}`);

      const state = await this.state(runtime, name);
      if (state && !STARTING_STATES.has(state.status)) {
        const exit = state.status === 'exited' || state.status === 'stopped' ? `exited with code ${state.exitCode}` : `is ${state.status}`;
        throw new DriverError(
          `The container ${exit} before answering GET /ok on port ${port}; see the deploy logs for its output. ` +
            `Check that the image starts an agent server listening on $PORT (${CONTAINER_PORT}).`,
        );
      }
      if (!state) {
        throw new DriverError(`The container ${name} disappeared before answering GET /ok on port ${port}; something else removed it.`);
      }

      const now = Date.now();
      if (now >= deadline) {
        throw new DriverError(
          `The container kept running but did not answer GET /ok with 200 on port ${port} within ${formatSeconds(this.healthTimeoutMs ?? 0)} ` +
            `(last attempt: ${lastProblem}); see the deploy logs for its output. ` +
            `Check that the server listens on 0.0.0.0:$PORT (${CONTAINER_PORT}) inside the container and serves GET /ok, or raise the deploy timeout if it starts slowly.`,
        );
      }
      if (now >= nextProgressAt) {
        await context.log('INFO', `Still waiting for GET /ok after ${formatSeconds(now - startedAt)} (last attempt: ${lastProblem})`);
        nextProgressAt = now + 10_000;
      }
      await sleep(Math.min(delayMs, Math.max(0, deadline - now)), context.signal);
      delayMs = Math.min(delayMs * 2, 1_000);
    }
  }

  private async state(runtime: ResolvedRuntime, name: string): Promise<{ status: string; exitCode: number } | null> {
    const result = await this.run(runtime, ['container', 'inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', name]);
    if (result.code !== 0) return null;
    const [status = 'unknown', exitCode = '0'] = result.stdout.trim().split(/\s+/);
    return { status, exitCode: Number(exitCode) };
  }

  /** Copies the container's last output into the deploy log: stdout as INFO, stderr as ERROR, in order. */
  private async captureLogs(runtime: ResolvedRuntime, name: string, secrets: string[], context: StepContext, expected: boolean): Promise<void> {
    const result = await this.run(runtime, ['logs', '--timestamps', '--tail', String(LOG_TAIL_LINES), name]);
    if (result.code !== 0) {
      if (expected) await safeLog(context, 'WARNING', `Could not read the container's output: ${lastLine(result)}`);
      return;
    }
    const lines = [
      ...timestamped(result.stdout).map((line) => ({ ...line, level: 'INFO' as const })),
      ...timestamped(result.stderr).map((line) => ({ ...line, level: 'ERROR' as const })),
    ]
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
      .slice(-LOG_TAIL_LINES);
    if (lines.length === 0) {
      await safeLog(context, 'INFO', `Container ${name} wrote no output`);
      return;
    }
    await safeLog(context, 'INFO', `Last ${lines.length} line(s) of output from container ${name}:`);
    for (const line of lines) await safeLog(context, line.level, `[container] ${redact(line.text, secrets)}`);
  }

  private async remove(runtime: ResolvedRuntime, names: string[]): Promise<void> {
    const args = runtime.kind === 'podman' ? ['rm', '-f', '-t', '0', '--', ...names] : ['rm', '-f', '--', ...names];
    const result = await this.run(runtime, args, { timeoutMs: COMMAND_TIMEOUT_MS });
    if (result.code === 0) return;
    // docker (unlike podman) fails on names that are already gone; only what still exists matters.
    const left: string[] = [];
    for (const name of names) if (await this.exists(runtime, name)) left.push(name);
    if (left.length > 0) {
      throw new DriverError(`Could not remove container(s) ${left.join(', ')}: \`${runtime.kind} rm\` failed: ${lastLine(result)}`);
    }
  }

  private run(runtime: ResolvedRuntime, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
    const env = options.extraEnv ? { ...runtime.env, ...options.extraEnv } : runtime.env;
    return new Promise((resolve) => {
      execFile(
        runtime.binary,
        args,
        {
          env,
          signal: options.signal,
          timeout: options.timeoutMs ?? COMMAND_TIMEOUT_MS,
          killSignal: 'SIGKILL',
          maxBuffer: 16 * 1024 * 1024,
          encoding: 'utf8',
        },
        (error, stdout, stderr) => {
          if (!error) return resolve({ code: 0, stdout, stderr });
          const failure = error as NodeJS.ErrnoException & { code?: number | string; killed?: boolean; signal?: string };
          let kind: CommandResult['failure'];
          if (failure.code === 'ENOENT') kind = 'not-found';
          else if (failure.name === 'AbortError' || options.signal?.aborted) kind = 'aborted';
          else if (failure.killed) kind = 'timeout';
          else if (typeof failure.code !== 'number') kind = 'error';
          // Never pass on error.message: it quotes the whole command line.
          const fallback = kind === 'not-found' ? `${runtime.binary} was not found` : kind ? `the command ${kind === 'error' ? 'could not run' : kind === 'timeout' ? 'timed out' : 'was aborted'}` : '';
          resolve({ code: typeof failure.code === 'number' ? failure.code : -1, stdout: stdout ?? '', stderr: stderr || fallback, failure: kind });
        },
      );
    });
  }
}

function runtimeEnv(kind: ContainerRuntimeKind, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...base };
  if (kind === 'podman') {
    if (!env.CONTAINERS_CONF && existsSyncSafe(BERTH_CONTAINERS_CONF)) env.CONTAINERS_CONF = BERTH_CONTAINERS_CONF;
    if (!env.CONTAINERS_REGISTRIES_CONF && existsSyncSafe(BERTH_REGISTRIES_CONF)) env.CONTAINERS_REGISTRIES_CONF = BERTH_REGISTRIES_CONF;
  }
  return env;
}

function existsSyncSafe(file: string): boolean {
  try {
    return existsSync(file);
  } catch {
    return false;
  }
}

async function findOnPath(binary: string, searchPath: string | undefined): Promise<string | null> {
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, binary);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}

/** Podman/docker container names: [a-zA-Z0-9][a-zA-Z0-9_.-]* */
function containerName(instanceName: string, revisionId: string): string {
  const clean = (value: string) =>
    value
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '-')
      .replace(/^[^a-z0-9]+|-+$/g, '');
  const instance = clean(instanceName).slice(0, 40).replace(/-+$/, '') || 'deployment';
  const revision = clean(revisionId).slice(0, 8) || 'revision';
  return `berth-${instance}-${revision}`;
}

function isContainerName(value: string): boolean {
  return /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(value);
}

function validateRequest(request: RunRequest): void {
  if (!request.image || request.image.startsWith('-') || /\s/.test(request.image)) {
    throw new DriverError(`'${request.image}' is not a valid image reference`);
  }
  for (const key of Object.keys(request.env)) {
    // Such names cannot be expressed in an env file (or an environment) without being misread.
    if (!/^[^=\s#\0][^=\s\0]*$/.test(key)) {
      throw new DriverError(`Environment variable name '${key}' is not valid: names cannot be empty, start with '#', or contain '=' or whitespace`);
    }
    if (request.env[key]?.includes('\0')) throw new DriverError(`The value of environment variable ${key} contains a NUL byte, which no environment can hold`);
  }
  const { cpu, memoryMb } = request.resources;
  if (cpu !== undefined && !(Number.isFinite(cpu) && cpu > 0)) throw new DriverError(`CPU limit ${cpu} is not a positive number`);
  if (memoryMb !== undefined && !(Number.isInteger(memoryMb) && memoryMb >= 6)) {
    throw new DriverError(`Memory limit ${memoryMb} MB is not valid: the container runtime needs a whole number of at least 6 MB`);
  }
}

function describeLimits(resources: RunRequest['resources']): string {
  const parts: string[] = [];
  if (resources.cpu !== undefined) parts.push(`cpu ${resources.cpu}`);
  if (resources.memoryMb !== undefined) parts.push(`memory ${resources.memoryMb} MB`);
  return parts.join(', ');
}

function secretValues(env: Record<string, string>): string[] {
  return [...new Set(Object.values(env).filter((value) => value.length >= MIN_REDACTED_LENGTH))].sort((a, b) => b.length - a.length);
}

function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('[redacted]');
  return out;
}

function timestamped(output: string): { at: string; text: string }[] {
  return output
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const match = /^(\d{4}-\d{2}-\d{2}T\S+)\s(.*)$/.exec(line);
      // Nanosecond timestamps of equal width compare correctly as strings.
      return match ? { at: match[1] ?? '', text: match[2] ?? '' } : { at: '', text: line };
    });
}

function lastLine(result: CommandResult): string {
  const lines = (result.stderr || result.stdout)
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const line = lines.at(-1) ?? `exit code ${result.code}`;
  return line
    .replace(/^Error:\s*/, '')
    .replace(/[.\s]+$/, '')
    .slice(0, 500);
}

async function freePort(host: string): Promise<number> {
  const now = Date.now();
  for (const [port, expires] of reservedPorts) if (expires <= now) reservedPorts.delete(port);
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await ephemeralPort(host);
    if (!reservedPorts.has(port)) {
      reservedPorts.set(port, now + PORT_RESERVATION_MS);
      return port;
    }
  }
  throw new DriverError(`Could not find a free TCP port on ${host}`);
}

function ephemeralPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not allocate a port'))));
    });
  });
}

async function probeOk(url: string, signal: AbortSignal): Promise<number | string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]), redirect: 'manual' });
    await response.body?.cancel();
    return response.status;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    if (cause?.code === 'ECONNREFUSED') return 'connection refused';
    if ((error as Error).name === 'TimeoutError') return `no answer within ${formatSeconds(PROBE_TIMEOUT_MS)}`;
    return errorMessage(error);
  }
}

function throwIfAborted(signal: AbortSignal, step: string): void {
  if (!signal.aborted) return;
  const reason = signal.reason instanceof Error ? signal.reason.message : signal.reason ? String(signal.reason) : 'no reason given';
  throw new DriverError(`Stopped while ${step}: the step was cancelled (${reason}).`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function safeLog(context: StepContext, level: LogLevel, message: string): Promise<void> {
  try {
    await context.log(level, message);
  } catch {
    // The failure being reported matters more than one lost log line.
  }
}
