import { DriverError, type RunRequest, type StepContext } from '../driver.js';
import { COMMAND_TIMEOUT_MS, lastOutputClause, runTool } from '../commands.js';
import { type ResolvedRuntime } from '../detect.js';
import { BERTH_CONTAINERS_CONF } from '../tools.js';
import { withEnvFile } from './env-file.js';
import { redact, secretValues } from './logs.js';
import { formatSeconds, safeLog, throwIfAborted } from './step.js';

export const DEPLOYMENT_LABEL = 'berth.deployment';
export const REVISION_LABEL = 'berth.revision';
/** Where the agent server listens inside its container (the agent-server images' default); set as PORT. */
export const CONTAINER_PORT = 8000;

export interface ContainerSpec {
  name: string;
  host: string;
  port: number;
  env: Record<string, string>;
  /** `host`: the container listens on `port` of the host's own network (PORT says so). */
  network?: 'bridge' | 'host';
  /** Labels of the runtime's own (standby.ts), beside the deployment's and the request's. */
  labels?: Record<string, string>;
}

export async function runContainer(runtime: ResolvedRuntime, request: RunRequest, container: ContainerSpec, context: StepContext): Promise<void> {
  const { name, host, port, env, network = 'bridge', labels = {} } = container;
  await withEnvFile(env, runtime.env, async (envFile, byName) => {
    const args = [
      'run',
      '-d',
      '--name',
      name,
      '--label',
      `${DEPLOYMENT_LABEL}=${request.deploymentId}`,
      '--label',
      `${REVISION_LABEL}=${request.revisionId}`,
      ...Object.entries({ ...request.labels, ...labels }).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
      ...(network === 'host'
        ? // The host's network: the server listens on PORT, which is `port`.
          ['--network', 'host']
        : // Published on loopback only: whatever address the server binds inside its own
          // network namespace, nothing outside this machine can reach it.
          ['--network', 'bridge', '--publish', `${host}:${port}:${CONTAINER_PORT}`]),
      '--pull',
      'never',
      '--env-file',
      envFile,
      ...Object.keys(byName).flatMap((key) => ['--env', key]),
    ];
    if (request.resources.cpu !== undefined) args.push('--cpus', String(request.resources.cpu));
    if (request.resources.memoryMb !== undefined) args.push('--memory', `${request.resources.memoryMb}m`);
    args.push(request.image);

    const result = await runTool(runtime, args, {
      signal: context.signal,
      timeoutMs: COMMAND_TIMEOUT_MS,
      extraEnv: byName,
    });
    throwIfAborted(context.signal, `starting container ${name}`);
    if (result.code !== 0) {
      const why = redact(
        result.failure === 'timeout' ? `it did not return within ${formatSeconds(COMMAND_TIMEOUT_MS)}` : lastOutputClause(result),
        secretValues(env),
      );
      await safeLog(context, 'ERROR', `\`${runtime.kind} run\` failed: ${why}`);
      throw new DriverError(
        `Could not start a container from image '${request.image}': \`${runtime.kind} run\` failed: ${why}. ` +
          (runtime.kind === 'podman'
            ? `Check that podman is configured for this machine (run scripts/setup-containers.sh and set CONTAINERS_CONF=${BERTH_CONTAINERS_CONF}).`
            : 'Check the Docker daemon and the image.'),
      );
    }
  });
}

export async function containerExists(runtime: ResolvedRuntime, name: string): Promise<boolean> {
  const result = await runTool(runtime, ['container', 'inspect', '--format', '{{.Name}}', name]);
  return result.code === 0;
}

export async function containerState(runtime: ResolvedRuntime, name: string): Promise<{ status: string; exitCode: number } | null> {
  const result = await runTool(runtime, ['container', 'inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', name]);
  if (result.code !== 0) return null;
  const [status = 'unknown', exitCode = '0'] = result.stdout.trim().split(/\s+/);
  return { status, exitCode: Number(exitCode) };
}

/** Names of every container (running or not) labelled with the deployment. */
export async function containersOf(runtime: ResolvedRuntime, deploymentId: string): Promise<string[]> {
  const result = await runTool(runtime, ['ps', '-a', '--filter', `label=${DEPLOYMENT_LABEL}=${deploymentId}`, '--format', '{{.Names}}']);
  if (result.code !== 0) {
    throw new DriverError(`Could not list the containers of deployment ${deploymentId}: \`${runtime.kind} ps\` failed: ${lastOutputClause(result)}`);
  }
  return result.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** A container found by label: whose revision it runs, whether it runs, and its loopback port. */
export interface LabelledContainer {
  name: string;
  deploymentId: string;
  revisionId: string;
  running: boolean;
  /** The host port published for the server (bridge network); null when none is. */
  hostPort: number | null;
}

/** Every container (running or not) carrying `label=value`, with what `inspect` says of it. */
export async function containersLabelled(runtime: ResolvedRuntime, label: string, value: string): Promise<LabelledContainer[]> {
  const listed = await runTool(runtime, ['ps', '-a', '--filter', `label=${label}=${value}`, '--format', '{{.Names}}']);
  if (listed.code !== 0) throw new DriverError(`Could not list containers: \`${runtime.kind} ps\` failed: ${lastOutputClause(listed)}`);
  const names = listed.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const found: LabelledContainer[] = [];
  const format = `{{index .Config.Labels "${DEPLOYMENT_LABEL}"}}\t{{index .Config.Labels "${REVISION_LABEL}"}}\t{{.State.Status}}\t{{json .HostConfig.PortBindings}}`;
  for (const name of names) {
    const inspected = await runTool(runtime, ['container', 'inspect', '--format', format, name]);
    // Removed between the listing and now: it no longer runs anything.
    if (inspected.code !== 0) continue;
    const [deploymentId = '', revisionId = '', status = '', bindings = 'null'] = inspected.stdout.trim().split('\t');
    found.push({ name, deploymentId, revisionId, running: status === 'running', hostPort: publishedPort(bindings) });
  }
  return found;
}

function publishedPort(bindings: string): number | null {
  try {
    const parsed = JSON.parse(bindings) as Record<string, { HostPort?: string }[] | null> | null;
    const port = Number(parsed?.[`${CONTAINER_PORT}/tcp`]?.[0]?.HostPort);
    return Number.isInteger(port) && port > 0 ? port : null;
  } catch {
    return null;
  }
}

/** Starts a stopped container again (after a host reboot), with its name, port and settings. */
export async function startContainer(runtime: ResolvedRuntime, name: string, signal: AbortSignal): Promise<void> {
  const result = await runTool(runtime, ['start', name], { signal, timeoutMs: COMMAND_TIMEOUT_MS });
  if (result.code !== 0) throw new DriverError(`Could not start container ${name} again: \`${runtime.kind} start\` failed: ${lastOutputClause(result)}`);
}

export async function removeContainers(runtime: ResolvedRuntime, names: string[]): Promise<void> {
  const args = runtime.kind === 'podman' ? ['rm', '-f', '-t', '0', '--', ...names] : ['rm', '-f', '--', ...names];
  const result = await runTool(runtime, args, { timeoutMs: COMMAND_TIMEOUT_MS });
  if (result.code === 0) return;
  // docker (unlike podman) fails on names that are already gone; only what still exists matters.
  const left: string[] = [];
  for (const name of names) if (await containerExists(runtime, name)) left.push(name);
  if (left.length > 0) {
    throw new DriverError(`Could not remove container(s) ${left.join(', ')}: \`${runtime.kind} rm\` failed: ${lastOutputClause(result)}`);
  }
}
