import path from 'node:path';

/**
 * The settings of `berth builder`, the build runner (docs/build-runners.md). Its own, like the
 * listener agent's: the control plane's address, a runner key, labels, how many builds at
 * once, a data directory and a health port. The key has no flag (argv is visible to every
 * user of the host) and is never logged.
 */
export interface RunnerConfig {
  /** Without a trailing slash. */
  berthUrl: string;
  runnerKey: string;
  /** Empty: the key's labels. */
  labels: string[];
  concurrency: number;
  dataDir: string;
  /** 0: no health endpoint. */
  healthPort: number;
  healthHost: string;
  builder: 'auto' | 'buildah' | 'podman' | 'docker';
  /** How long one claim waits for a job. */
  pollSeconds: number;
  logLevel: string;
}

/** Every variable `berth builder` reads (BERTH_URL and LOG_LEVEL are the listener agent's names too). */
export const RUNNER_VARIABLES = [
  'BERTH_URL',
  'BERTH_RUNNER_KEY',
  'BERTH_RUNNER_LABELS',
  'BERTH_RUNNER_CONCURRENCY',
  'BERTH_RUNNER_DATA_DIR',
  'BERTH_RUNNER_BUILDER',
  'BERTH_RUNNER_HEALTH_PORT',
  'BERTH_RUNNER_HEALTH_HOST',
  'BERTH_RUNNER_POLL_SECONDS',
  'LOG_LEVEL',
] as const;

export interface RunnerFlags {
  url?: string;
  dataDir?: string;
  labels?: string;
  concurrency?: string;
  healthPort?: string;
}

export class RunnerConfigError extends Error {
  override name = 'RunnerConfigError';
}

const LABEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number, problems: string[]): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) problems.push(`${name} must be an integer from ${min} to ${max} (got '${raw.trim()}')`);
  return value;
}

/** Validates the environment and flags; every problem at once, naming the variable, never the key's value. */
export function loadRunnerConfig(env: NodeJS.ProcessEnv, flags: RunnerFlags = {}): RunnerConfig {
  const problems: string[] = [];
  const url = (flags.url ?? env.BERTH_URL ?? '').trim();
  if (!/^https?:\/\/\S+$/.test(url)) problems.push("BERTH_URL is required: the control plane's base URL (http:// or https://)");
  const key = env.BERTH_RUNNER_KEY ?? '';
  if (key.trim() === '') problems.push('BERTH_RUNNER_KEY is required: a runner key (POST /v1/api-keys with role runner)');
  const labels = (flags.labels ?? env.BERTH_RUNNER_LABELS ?? '')
    .split(',')
    .map((label) => label.trim())
    .filter(Boolean);
  const bad = labels.find((label) => !LABEL.test(label));
  if (bad !== undefined) problems.push(`BERTH_RUNNER_LABELS holds an invalid label '${bad}' (letters, digits, '.', '_', '-')`);
  const builder = (env.BERTH_RUNNER_BUILDER ?? 'auto').trim() || 'auto';
  if (!['auto', 'buildah', 'podman', 'docker'].includes(builder))
    problems.push(`BERTH_RUNNER_BUILDER must be auto, buildah, podman or docker (got '${builder}')`);
  const concurrency = integer('BERTH_RUNNER_CONCURRENCY', flags.concurrency ?? env.BERTH_RUNNER_CONCURRENCY, 1, 1, 64, problems);
  const healthPort = integer('BERTH_RUNNER_HEALTH_PORT', flags.healthPort ?? env.BERTH_RUNNER_HEALTH_PORT, 0, 0, 65535, problems);
  const pollSeconds = integer('BERTH_RUNNER_POLL_SECONDS', env.BERTH_RUNNER_POLL_SECONDS, 30, 1, 60, problems);
  if (problems.length > 0) throw new RunnerConfigError(`berth builder cannot start:\n  ${problems.join('\n  ')}`);
  return {
    berthUrl: url.replace(/\/+$/, ''),
    runnerKey: key.trim(),
    labels,
    concurrency,
    dataDir: path.resolve(flags.dataDir ?? env.BERTH_RUNNER_DATA_DIR ?? './berth-builder'),
    healthPort,
    healthHost: (env.BERTH_RUNNER_HEALTH_HOST ?? '127.0.0.1').trim() || '127.0.0.1',
    builder: builder as RunnerConfig['builder'],
    pollSeconds,
    logLevel: (env.LOG_LEVEL ?? 'info').trim() || 'info',
  };
}
