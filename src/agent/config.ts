import os from 'node:os';
import path from 'node:path';
import { type Static, Type } from 'typebox';
import { Check } from 'typebox/schema'; // typebox/value's Check calls this one; the value toolkit is 300 modules more

/**
 * The settings of `berth listener`, the agent that runs deployments on a container host or
 * in a Kubernetes cluster.
 * They are its own (the server's `environment.ts` is untouched): the control plane's address,
 * the listener key and a data directory for the agent's small local state.
 */
export const AGENT_ENVIRONMENT = Type.Object({
  BERTH_URL: Type.String({ pattern: '^https?://[^\\s]+$', description: "the control plane's base URL (http:// or https://)" }),
  BERTH_LISTENER_KEY: Type.String({ minLength: 1, description: 'the listener key Berth gave when the listener was created; never logged' }),
  BERTH_LISTENER_DATA_DIR: Type.String({ minLength: 1, default: './berth-listener', description: "the agent's local state (state file, process lock)" }),
  BERTH_LISTENER_COMPUTE_TYPE: Type.Union([Type.Literal('container'), Type.Literal('docker'), Type.Literal('podman'), Type.Literal('k8s')], {
    default: 'container',
    description:
      "where deployments run, as the listener's compute_type: k8s for a Kubernetes cluster, docker or podman (or container, with BERTH_LISTENER_RUNTIME) for this host",
  }),
  BERTH_LISTENER_RUNTIME: Type.Union([Type.Literal('auto'), Type.Literal('podman'), Type.Literal('docker')], {
    default: 'auto',
    description: 'container runtime of a container host: auto prefers podman, then docker',
  }),
  BERTH_LISTENER_PUBLISH_ADDRESS: Type.String({
    pattern: '^(25[0-5]|2[0-4]\\d|1?\\d?\\d)(\\.(25[0-5]|2[0-4]\\d|1?\\d?\\d)){3}$',
    default: '127.0.0.1',
    description: "container host: the host address deployments' ports are published on (0.0.0.0 for every interface)",
  }),
  BERTH_LISTENER_PUBLIC_HOST: Type.String({
    pattern: '^[A-Za-z0-9.-]*$',
    default: '',
    description:
      'container host: the host name users reach deployments by, in the URLs Berth shows (default: the publish address, or the hostname for 0.0.0.0)',
  }),
  BERTH_LISTENER_NAMESPACE: Type.String({
    pattern: '^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$',
    default: '',
    description: "k8s: the namespace for deployments Berth names none for (default: the kubeconfig context's, or the pod's own)",
  }),
  BERTH_LISTENER_RESYNC_SECONDS: Type.Integer({
    minimum: 10,
    maximum: 86_400,
    default: 300,
    description: 'k8s: how often running deployments are applied again, undoing changes made to them by hand',
  }),
  BERTH_LISTENER_POLL_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 60,
    default: 30,
    description: 'how long one state request waits for a change; also how often running containers are checked when nothing changes',
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' },
  ),
});

type AgentEnvironment = Static<typeof AGENT_ENVIRONMENT>;

export interface ContainerHostSettings {
  kind: 'container';
  runtime: 'auto' | 'podman' | 'docker';
  publishAddress: string;
  publicHost: string;
}

export interface KubernetesSettings {
  kind: 'k8s';
  /** Empty: the kubeconfig context's namespace. */
  namespace: string;
  resyncSeconds: number;
}

export interface AgentConfig {
  /** Without a trailing slash. */
  berthUrl: string;
  listenerKey: string;
  dataDir: string;
  compute: ContainerHostSettings | KubernetesSettings;
  pollSeconds: number;
  logLevel: string;
}

/** Flags of `berth listener`; each wins over its variable. The key has no flag: argv is visible to every user of the host. */
export interface AgentFlags {
  url?: string;
  dataDir?: string;
  runtime?: string;
  computeType?: string;
}

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

const SECRET = new Set(['BERTH_LISTENER_KEY']);

/** Validates the environment and flags; every problem at once, naming the variable, never a key's value. */
export function loadAgentConfig(env: NodeJS.ProcessEnv, flags: AgentFlags = {}): AgentConfig {
  const given: Record<string, string | undefined> = {
    BERTH_URL: flags.url ?? env.BERTH_URL,
    BERTH_LISTENER_KEY: env.BERTH_LISTENER_KEY,
    BERTH_LISTENER_DATA_DIR: flags.dataDir ?? env.BERTH_LISTENER_DATA_DIR,
    BERTH_LISTENER_COMPUTE_TYPE: flags.computeType ?? env.BERTH_LISTENER_COMPUTE_TYPE,
    BERTH_LISTENER_RUNTIME: flags.runtime ?? env.BERTH_LISTENER_RUNTIME,
    BERTH_LISTENER_PUBLISH_ADDRESS: env.BERTH_LISTENER_PUBLISH_ADDRESS,
    BERTH_LISTENER_PUBLIC_HOST: env.BERTH_LISTENER_PUBLIC_HOST,
    BERTH_LISTENER_NAMESPACE: env.BERTH_LISTENER_NAMESPACE,
    BERTH_LISTENER_RESYNC_SECONDS: env.BERTH_LISTENER_RESYNC_SECONDS,
    BERTH_LISTENER_POLL_SECONDS: env.BERTH_LISTENER_POLL_SECONDS,
    LOG_LEVEL: env.LOG_LEVEL,
  };
  const values: Record<string, string | number> = {};
  const problems: string[] = [];
  for (const [name, schema] of Object.entries(AGENT_ENVIRONMENT.properties)) {
    const notes = schema as { default?: string | number; description?: string; type?: string };
    const raw = given[name];
    const text = raw === undefined || raw.trim() === '' ? notes.default : SECRET.has(name) ? raw : raw.trim();
    const value = notes.type === 'integer' && typeof text === 'string' && /^\d+$/.test(text) ? Number(text) : text;
    if (value === undefined) {
      problems.push(`${name} is required: ${notes.description ?? ''}`.trim());
      continue;
    }
    if (!Check(schema, value)) {
      problems.push(
        `${name} is invalid${SECRET.has(name) ? ' (value not shown)' : ` (got '${value}')`}: ${notes.description ?? 'see docs/listener-protocol.md'}`,
      );
      continue;
    }
    values[name] = value;
  }
  if (problems.length > 0) throw new AgentConfigError(`berth listener cannot start:\n  ${problems.join('\n  ')}`);
  const read = values as unknown as AgentEnvironment;
  return {
    berthUrl: read.BERTH_URL.replace(/\/+$/, ''),
    listenerKey: read.BERTH_LISTENER_KEY,
    dataDir: path.resolve(read.BERTH_LISTENER_DATA_DIR),
    compute: computeSettings(read),
    pollSeconds: read.BERTH_LISTENER_POLL_SECONDS,
    logLevel: read.LOG_LEVEL,
  };
}

function computeSettings(read: AgentEnvironment): ContainerHostSettings | KubernetesSettings {
  const type = read.BERTH_LISTENER_COMPUTE_TYPE;
  if (type === 'k8s') return { kind: 'k8s', namespace: read.BERTH_LISTENER_NAMESPACE, resyncSeconds: read.BERTH_LISTENER_RESYNC_SECONDS };
  const publishAddress = read.BERTH_LISTENER_PUBLISH_ADDRESS;
  const publicHost = read.BERTH_LISTENER_PUBLIC_HOST || (publishAddress === '0.0.0.0' ? os.hostname() : publishAddress);
  return { kind: 'container', runtime: type === 'container' ? read.BERTH_LISTENER_RUNTIME : type, publishAddress, publicHost };
}
