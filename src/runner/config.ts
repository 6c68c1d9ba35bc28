import path from 'node:path';
import type { BuildSandbox } from '../sandbox/sandbox.js';
import { SPOOL_MAX_BYTES } from './spool.js';

/** How a runner's builds are confined: the server's BERTH_BUILD_SANDBOX settings, read the same way. */
export type RunnerSandboxSettings = BuildSandbox['settings'];

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
  /** The most of a job's log batches the spool holds while Berth has not taken them (BERTH_RUNNER_SPOOL_MAX_MB). */
  spoolMaxBytes: number;
  logLevel: string;
  /** BERTH_BUILD_SANDBOX and its settings; undefined when builds run unconfined (`off`). */
  sandbox: RunnerSandboxSettings | undefined;
  /** BERTH_BASE_IMAGE_NODE / _PYTHON, as the control plane reads them. */
  baseImages: { node?: string; python?: string };
}

/**
 * The server's variables `berth builder` reads too, with the same meaning and defaults (a
 * test holds them to the server's schema): the build sandbox and the base images, so that a
 * build on a runner is confined and based as the control plane's own would be.
 */
export const RUNNER_SHARED_VARIABLES = [
  'BERTH_BUILD_SANDBOX',
  'BERTH_BUILD_USER',
  'BERTH_BUILD_DIR',
  'BERTH_BUILD_MEMORY_MB',
  'BERTH_BUILD_CPUS',
  'BERTH_BUILD_PIDS',
  'BERTH_BUILD_DISK_MB',
  'BERTH_BUILD_DENY_NETWORKS',
  'BERTH_BASE_IMAGE_NODE',
  'BERTH_BASE_IMAGE_PYTHON',
] as const;

/** The defaults of the shared variables: the server's (environment.ts). */
export const RUNNER_SHARED_DEFAULTS = {
  BERTH_BUILD_SANDBOX: 'on',
  BERTH_BUILD_USER: 'berth-build',
  BERTH_BUILD_DIR: '/var/lib/berth-build',
  BERTH_BUILD_MEMORY_MB: 4096,
  BERTH_BUILD_CPUS: 2,
  BERTH_BUILD_PIDS: 2048,
  BERTH_BUILD_DISK_MB: 20480,
} as const;

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
  'BERTH_RUNNER_SPOOL_MAX_MB',
  'LOG_LEVEL',
  ...RUNNER_SHARED_VARIABLES,
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

const MB = 1024 * 1024;
const SWITCH_ON = ['on', 'true', '1', 'yes'];
const SWITCH_OFF = ['off', 'false', '0', 'no'];
const CIDR = /^[0-9a-fA-F:.]+\/[0-9]{1,3}$/;
const LABEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number, problems: string[]): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw.trim());
  const range = Number.isFinite(max) ? `from ${min} to ${max}` : `of at least ${min}`;
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) problems.push(`${name} must be an integer ${range} (got '${raw.trim()}')`);
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
  const spoolMaxMb = integer('BERTH_RUNNER_SPOOL_MAX_MB', env.BERTH_RUNNER_SPOOL_MAX_MB, SPOOL_MAX_BYTES / MB, 1, 1_048_576, problems);
  const sandbox = sandboxSettings(env, problems);
  const baseImages = {
    ...(env.BERTH_BASE_IMAGE_NODE?.trim() ? { node: env.BERTH_BASE_IMAGE_NODE.trim() } : {}),
    ...(env.BERTH_BASE_IMAGE_PYTHON?.trim() ? { python: env.BERTH_BASE_IMAGE_PYTHON.trim() } : {}),
  };
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
    spoolMaxBytes: spoolMaxMb * MB,
    logLevel: (env.LOG_LEVEL ?? 'info').trim() || 'info',
    sandbox,
    baseImages,
  };
}

/** BERTH_BUILD_SANDBOX (on unless `off`) and its limits, with the server's names, ranges and defaults. */
function sandboxSettings(env: NodeJS.ProcessEnv, problems: string[]): RunnerSandboxSettings | undefined {
  const defaults = RUNNER_SHARED_DEFAULTS;
  const switched = (env.BERTH_BUILD_SANDBOX ?? '').trim().toLowerCase() || defaults.BERTH_BUILD_SANDBOX;
  if (![...SWITCH_ON, ...SWITCH_OFF].includes(switched)) problems.push(`BERTH_BUILD_SANDBOX must be on or off (got '${switched}')`);
  const memoryMb = integer('BERTH_BUILD_MEMORY_MB', env.BERTH_BUILD_MEMORY_MB, defaults.BERTH_BUILD_MEMORY_MB, 128, Infinity, problems);
  const cpus = integer('BERTH_BUILD_CPUS', env.BERTH_BUILD_CPUS, defaults.BERTH_BUILD_CPUS, 1, 256, problems);
  const pids = integer('BERTH_BUILD_PIDS', env.BERTH_BUILD_PIDS, defaults.BERTH_BUILD_PIDS, 64, Infinity, problems);
  const diskMb = integer('BERTH_BUILD_DISK_MB', env.BERTH_BUILD_DISK_MB, defaults.BERTH_BUILD_DISK_MB, 0, Infinity, problems);
  const denyNetworks = (env.BERTH_BUILD_DENY_NETWORKS ?? '')
    .split(',')
    .map((network) => network.trim())
    .filter(Boolean);
  const badNetwork = denyNetworks.find((network) => !CIDR.test(network));
  if (badNetwork !== undefined) problems.push(`BERTH_BUILD_DENY_NETWORKS must be CIDR networks separated by commas, such as 10.0.0.0/8 (got '${badNetwork}')`);
  if (SWITCH_OFF.includes(switched)) return undefined;
  return {
    user: (env.BERTH_BUILD_USER ?? '').trim() || defaults.BERTH_BUILD_USER,
    dir: path.resolve((env.BERTH_BUILD_DIR ?? '').trim() || defaults.BERTH_BUILD_DIR),
    memoryMb,
    cpus,
    pids,
    diskMb,
    denyNetworks,
  };
}
