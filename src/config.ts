import path from 'node:path';
import { DEFAULT_LIMITS, type RequestLimits } from './http/limits.js';

/** Runtime configuration, read once from the environment and validated at boot. */
export interface Config {
  port: number;
  host: string;
  /** `sqlite` keeps everything in `dataDir`; `postgres` uses `databaseUrl`. */
  database: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };
  dataDir: string;
  bootstrapApiKey: string | undefined;
  encryptionKey: string | undefined;
  logLevel: string;
  limits: RequestLimits;
  engine: {
    /** Run the revision engine in this process (`BERTH_ENGINE=off` for API-only replicas). */
    enabled: boolean;
    runtime: ContainerRuntimeChoice;
    concurrency: number;
  };
}

export type ContainerRuntimeChoice = 'auto' | 'podman' | 'docker' | 'none';
const RUNTIMES: ContainerRuntimeChoice[] = ['auto', 'podman', 'docker', 'none'];

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const port = parsePort(env.PORT ?? '8124', problems);
  const host = env.HOST?.trim() || '127.0.0.1';
  const dataDir = path.resolve(env.BERTH_DATA_DIR?.trim() || './data');
  const logLevel = (env.LOG_LEVEL?.trim() || 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got '${env.LOG_LEVEL}')`);
  }

  let database: Config['database'] = { kind: 'sqlite', file: path.join(dataDir, 'berth.sqlite') };
  const url = env.DATABASE_URL?.trim();
  if (url) {
    if (/^postgres(ql)?:\/\//.test(url)) database = { kind: 'postgres', url };
    else if (url.startsWith('sqlite:')) database = { kind: 'sqlite', file: path.resolve(url.slice('sqlite:'.length).replace(/^\/\//, '')) };
    else problems.push("DATABASE_URL must start with 'postgres://', 'postgresql://' or 'sqlite:' (value not shown)");
  }

  const bootstrapApiKey = env.BERTH_BOOTSTRAP_API_KEY || undefined;
  if (bootstrapApiKey !== undefined && bootstrapApiKey.length < 16) {
    problems.push('BERTH_BOOTSTRAP_API_KEY must be at least 16 characters long');
  }
  const encryptionKey = env.BERTH_ENCRYPTION_KEY || undefined;

  const engineSwitch = (env.BERTH_ENGINE?.trim() || 'on').toLowerCase();
  if (!['on', 'off', 'true', 'false', '1', '0'].includes(engineSwitch)) problems.push(`BERTH_ENGINE must be 'on' or 'off' (got '${env.BERTH_ENGINE}')`);
  const runtime = (env.BERTH_CONTAINER_RUNTIME?.trim() || 'auto').toLowerCase() as ContainerRuntimeChoice;
  if (!RUNTIMES.includes(runtime)) problems.push(`BERTH_CONTAINER_RUNTIME must be one of ${RUNTIMES.join(', ')} (got '${env.BERTH_CONTAINER_RUNTIME}')`);
  const concurrency = Number(env.BERTH_ENGINE_CONCURRENCY?.trim() || '4');
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    problems.push(`BERTH_ENGINE_CONCURRENCY must be an integer from 1 to 64 (got '${env.BERTH_ENGINE_CONCURRENCY}')`);
  }

  const limits: RequestLimits = {
    rateLimitPerMinute: integerSetting(env, 'BERTH_RATE_LIMIT_PER_MINUTE', DEFAULT_LIMITS.rateLimitPerMinute, 0, problems),
    bodyLimitBytes: integerSetting(env, 'BERTH_BODY_LIMIT_BYTES', DEFAULT_LIMITS.bodyLimitBytes, 1024, problems),
    requestTimeoutMs: integerSetting(env, 'BERTH_REQUEST_TIMEOUT_MS', DEFAULT_LIMITS.requestTimeoutMs, 1000, problems),
  };

  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
  const engine = { enabled: ['on', 'true', '1'].includes(engineSwitch), runtime, concurrency };
  return { port, host, database, dataDir, bootstrapApiKey, encryptionKey, logLevel, limits, engine };
}

function parsePort(raw: string, problems: string[]): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || port < 0 || port > 65535) {
    problems.push(`PORT must be an integer between 0 and 65535 (got '${raw}')`);
    return 0;
  }
  return port;
}

function integerSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, minimum: number, problems: string[]): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < minimum) {
    problems.push(`${name} must be an integer of at least ${minimum} (got '${raw}')`);
    return fallback;
  }
  return value;
}
