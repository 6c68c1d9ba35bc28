import path from 'node:path';
import { type Static, Type } from 'typebox';
import { Check } from 'typebox/value';

/**
 * The settings of `berth listener`, the agent that runs deployments on a container host.
 * They are its own (the server's `environment.ts` is untouched): the control plane's address,
 * the listener key and a data directory for the agent's small local state.
 */
export const AGENT_ENVIRONMENT = Type.Object({
  BERTH_URL: Type.String({ pattern: '^https?://[^\\s]+$', description: "the control plane's base URL (http:// or https://)" }),
  BERTH_LISTENER_KEY: Type.String({ minLength: 1, description: 'the listener key Berth gave when the listener was created; never logged' }),
  BERTH_LISTENER_DATA_DIR: Type.String({ minLength: 1, default: './berth-listener', description: "the agent's local state (state file, process lock)" }),
  BERTH_LISTENER_RUNTIME: Type.Union([Type.Literal('auto'), Type.Literal('podman'), Type.Literal('docker')], {
    default: 'auto',
    description: 'container runtime: auto prefers podman, then docker',
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

export interface AgentConfig {
  /** Without a trailing slash. */
  berthUrl: string;
  listenerKey: string;
  dataDir: string;
  runtime: 'auto' | 'podman' | 'docker';
  pollSeconds: number;
  logLevel: string;
}

/** Flags of `berth listener`; each wins over its variable. The key has no flag: argv is visible to every user of the host. */
export interface AgentFlags {
  url?: string;
  dataDir?: string;
  runtime?: string;
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
    BERTH_LISTENER_RUNTIME: flags.runtime ?? env.BERTH_LISTENER_RUNTIME,
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
    runtime: read.BERTH_LISTENER_RUNTIME,
    pollSeconds: read.BERTH_LISTENER_POLL_SECONDS,
    logLevel: read.LOG_LEVEL,
  };
}
