import net from 'node:net';
import path from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { UploadLimits } from './domain/upload-quota.js';
import { BUILDERS, ENVIRONMENT, type Environment, isOn, RUNTIMES } from './environment.js';
import { parseRegistryLocation, type RegistryLocation, RegistryLocationError } from './domain/registry-location.js';
import { cachedValidator } from './schema-code-cache.js';

/** BERTH_REGISTRY and the registry's token authentication (registry/setup.ts opens it). */
export interface RegistrySettings {
  location: RegistryLocation;
  /** Whether Berth's pushes and pulls check the registry's TLS certificate. */
  tlsVerify: boolean;
  /** `auth.token.service` of the registry. */
  service: string;
  /** `auth.token.issuer` of the registry. */
  issuer: string;
  /** A signing key and certificate of the operator's (PEM files); else Berth's own, made once in the data directory. */
  keyFile?: string;
  certFile?: string;
}

/** Runtime configuration, read once from the environment and validated at boot. */
export interface Config {
  port: number;
  host: string;
  /** `sqlite` keeps everything in `dataDir`; `postgres` uses `databaseUrl`. */
  database: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };
  dataDir: string;
  bootstrapApiKey: string | undefined;
  encryptionKey: string | undefined;
  /** BERTH_NEW_ENCRYPTION_KEY: only `berth rotate-encryption-key` reads it. */
  newEncryptionKey: string | undefined;
  logLevel: string;
  logFormat: 'auto' | 'json' | 'pretty';
  limits: RequestLimits;
  /** GET /metrics: a bearer token it requires, and the port `berth engine` serves it on. */
  metrics: { token: string | undefined; enginePort: number | undefined };
  /** Revisions kept per deployment; older finished ones are removed (never the active or the latest). */
  revisionsKept: number;
  /** BERTH_IDEMPOTENCY_KEY_HOURS, in ms: how long an Idempotency-Key and its first answer are kept. */
  idempotencyKeyTtlMs: number;
  /** BERTH_SESSION_HOURS, in ms: how long a dashboard session lasts. */
  sessionTtlMs: number;
  /** BERTH_AUDIT_RETENTION_DAYS: how long the audit log keeps a row. */
  auditRetentionDays: number;
  /** BERTH_WEBHOOK_DELIVERY_RETENTION_DAYS: how long a finished webhook delivery and its attempts are kept. */
  webhookDeliveryRetentionDays: number;
  /** BERTH_OUTBOUND_ALLOW_PRIVATE: whether outbound webhooks may go to non-public addresses. */
  outboundAllowPrivate: boolean;
  /** BERTH_PREVIEWS_ALLOW_FORKS: whether pull requests from forks may get previews (where the deployment allows them too). */
  previewsAllowForks: boolean;
  /** BERTH_PUBLIC_URL: Berth's address as clients and code hosts reach it; else taken from each request. */
  publicUrl: string | undefined;
  codehost: {
    /** BERTH_GIT_ALLOW_LOCAL: whether `git` integrations may name repositories on the Berth host. */
    allowLocal: boolean;
    /** BERTH_GIT_POLL_SECONDS: how often `git` integrations are asked for new commits (build on push); 0 is never. */
    pollSeconds: number;
    /** BERTH_GIT_CONCURRENCY: git processes this process runs at once. */
    gitConcurrency: number;
    /** BERTH_GIT_TIMEOUT_SECONDS, in ms: the time one git command asking a remote may take. */
    gitTimeoutMs: number;
  };
  /** Pending upload archives (received or being received, not yet built or expired) allowed at once. */
  uploads: UploadLimits;
  engine: {
    /** Run the revision engine in this process (`BERTH_ENGINE=off` for API-only replicas). */
    enabled: boolean;
    runtime: ContainerRuntimeChoice;
    concurrency: number;
    /** BERTH_ENGINE_WORKSPACE_SLOTS (undefined: the engine's default, domain/fair-share.ts). */
    workspaceSlots: number | undefined;
    /** BERTH_MAX_BUILD_TIMEOUT_SECONDS / BERTH_MAX_DEPLOY_TIMEOUT_SECONDS. */
    maxBuildTimeoutSeconds: number;
    maxDeployTimeoutSeconds: number;
    /** BERTH_CONTAINER_NETWORK: `bridge` (a port published on loopback) or `host` (the host's network). */
    network: 'bridge' | 'host';
    /** BERTH_STANDBY_SECONDS / BERTH_STANDBY_PER_DEPLOYMENT: replaced containers kept paused for a rollback. */
    standbySeconds: number;
    standbyPerDeployment: number;
  };
  /** BERTH_REGISTRY and its token authentication: where built and pushed images live. */
  registry: RegistrySettings | undefined;
  /** Databases Berth creates per deployment, when these servers are configured. */
  provisioning: {
    /** BERTH_DEPLOYMENT_POSTGRES_URL: an admin connection (CREATEDB, CREATEROLE). */
    postgresUrl?: string;
    /** BERTH_DEPLOYMENT_REDIS_URL: an admin connection (ACL rights). */
    redisUrl?: string;
    /** BERTH_DEPLOYMENT_DATABASE_HOST: the host containers use to reach those servers, when not the URLs' own. */
    containerHost?: string;
    /** BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE: deployments of one workspace with a provisioned database (and with a Redis user) at once. */
    perWorkspace: number;
  };
  build: {
    /** BERTH_BUILDER: which program builds images, `none` to refuse code-host builds, or `runners` to hand them to `berth builder` processes. */
    builder: BuilderChoice;
    /** BERTH_RUNNER_WAIT_SECONDS and BERTH_RUNNER_LEASE_SECONDS, in ms (docs/build-runners.md). */
    runnerWaitMs: number;
    runnerLeaseMs: number;
    /** BERTH_BASE_IMAGE_NODE / _PYTHON: replace the LangGraph CLI's base images (tagged as the CLI tags them). */
    baseImages: { node?: string; python?: string };
    /** BERTH_BUILD_SANDBOX and its settings; undefined when builds run unconfined (`off`). */
    sandbox: BuildSandboxSettings | undefined;
  };
}

/** How builds are confined: see BERTH_BUILD_SANDBOX and the settings after it in `environment.ts`, and docs/security.md. */
export interface BuildSandboxSettings {
  user: string;
  dir: string;
  memoryMb: number;
  cpus: number;
  pids: number;
  /** Per workspace; 0 is unbounded. */
  diskMb: number;
  /** Networks builds may not reach besides the host's own addresses, loopback and link-local. */
  denyNetworks: string[];
}

export type ContainerRuntimeChoice = (typeof RUNTIMES)[number];
export type BuilderChoice = (typeof BUILDERS)[number];

/** What limits every request: see the variables of the same names in `environment.ts`. */
export interface RequestLimits {
  /** Requests per minute per API key (per client address without a key); 0 turns limiting off. */
  rateLimitPerMinute: number;
  /** Largest accepted request body; larger bodies get 413. */
  bodyLimitBytes: number;
  /** Time a client has to send a whole request (headers and body); slower ones get 408. */
  requestTimeoutMs: number;
  /** Time an answer may take to be written out to a client that reads slowly or not at all; then the connection closes. */
  responseWriteTimeoutMs: number;
  /**
   * Proxies (addresses, CIDR ranges, or `loopback`, `linklocal`, `uniquelocal`) whose
   * `X-Forwarded-For` names the client: the address that per-address limits count by.
   * Empty: the connection's own address counts, and `X-Forwarded-For` is ignored.
   */
  trustedProxies: string[];
  /** Largest code-host webhook body; larger ones get 413. */
  webhookBodyLimitBytes: number;
  /** Webhook bodies read at once before their signature is checked; one workspace gets at most half. */
  webhookConcurrentBodies: number;
}

export class ConfigError extends Error {}

/** Reads the environment through its schema, then derives the settings that combine variables. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const vars = readEnvironment(env, problems);
  if (!vars) throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  const dataDir = path.resolve(vars.BERTH_DATA_DIR);

  let database: Config['database'] = { kind: 'sqlite', file: path.join(dataDir, 'berth.sqlite') };
  const url = vars.DATABASE_URL;
  if (url?.startsWith('sqlite:')) database = { kind: 'sqlite', file: path.resolve(url.slice('sqlite:'.length).replace(/^\/\//, '')) };
  else if (url) database = { kind: 'postgres', url };

  const limits: RequestLimits = {
    rateLimitPerMinute: vars.BERTH_RATE_LIMIT_PER_MINUTE,
    bodyLimitBytes: vars.BERTH_BODY_LIMIT_BYTES,
    requestTimeoutMs: vars.BERTH_REQUEST_TIMEOUT_MS,
    responseWriteTimeoutMs: vars.BERTH_RESPONSE_WRITE_TIMEOUT_MS,
    trustedProxies: trustedProxies(vars.BERTH_TRUSTED_PROXIES, problems),
    webhookBodyLimitBytes: vars.BERTH_WEBHOOK_BODY_LIMIT_BYTES,
    webhookConcurrentBodies: vars.BERTH_WEBHOOK_CONCURRENT_BODIES,
  };
  const registry = registrySettings(vars, problems);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);

  return {
    port: vars.PORT,
    host: vars.HOST,
    database,
    dataDir,
    bootstrapApiKey: vars.BERTH_BOOTSTRAP_API_KEY,
    encryptionKey: vars.BERTH_ENCRYPTION_KEY,
    newEncryptionKey: vars.BERTH_NEW_ENCRYPTION_KEY,
    logLevel: vars.LOG_LEVEL,
    logFormat: vars.BERTH_LOG_FORMAT,
    limits,
    metrics: { token: vars.BERTH_METRICS_TOKEN, enginePort: vars.BERTH_ENGINE_METRICS_PORT },
    revisionsKept: vars.BERTH_REVISIONS_KEPT,
    idempotencyKeyTtlMs: vars.BERTH_IDEMPOTENCY_KEY_HOURS * 3_600_000,
    sessionTtlMs: vars.BERTH_SESSION_HOURS * 3_600_000,
    auditRetentionDays: vars.BERTH_AUDIT_RETENTION_DAYS,
    webhookDeliveryRetentionDays: vars.BERTH_WEBHOOK_DELIVERY_RETENTION_DAYS,
    outboundAllowPrivate: isOn(vars.BERTH_OUTBOUND_ALLOW_PRIVATE),
    previewsAllowForks: isOn(vars.BERTH_PREVIEWS_ALLOW_FORKS),
    publicUrl: vars.BERTH_PUBLIC_URL,
    codehost: {
      allowLocal: isOn(vars.BERTH_GIT_ALLOW_LOCAL),
      pollSeconds: vars.BERTH_GIT_POLL_SECONDS,
      gitConcurrency: vars.BERTH_GIT_CONCURRENCY,
      gitTimeoutMs: vars.BERTH_GIT_TIMEOUT_SECONDS * 1000,
    },
    uploads: {
      pendingBytesPerDeployment: vars.BERTH_UPLOAD_PENDING_BYTES_PER_DEPLOYMENT,
      pendingBytesPerWorkspace: vars.BERTH_UPLOAD_PENDING_BYTES_PER_WORKSPACE,
    },
    engine: {
      enabled: isOn(vars.BERTH_ENGINE),
      runtime: vars.BERTH_CONTAINER_RUNTIME,
      concurrency: vars.BERTH_ENGINE_CONCURRENCY,
      workspaceSlots: vars.BERTH_ENGINE_WORKSPACE_SLOTS,
      maxBuildTimeoutSeconds: vars.BERTH_MAX_BUILD_TIMEOUT_SECONDS,
      maxDeployTimeoutSeconds: vars.BERTH_MAX_DEPLOY_TIMEOUT_SECONDS,
      network: vars.BERTH_CONTAINER_NETWORK,
      standbySeconds: vars.BERTH_STANDBY_SECONDS,
      standbyPerDeployment: vars.BERTH_STANDBY_PER_DEPLOYMENT,
    },
    build: {
      builder: vars.BERTH_BUILDER,
      runnerWaitMs: vars.BERTH_RUNNER_WAIT_SECONDS * 1000,
      runnerLeaseMs: vars.BERTH_RUNNER_LEASE_SECONDS * 1000,
      baseImages: {
        ...(vars.BERTH_BASE_IMAGE_NODE ? { node: vars.BERTH_BASE_IMAGE_NODE } : {}),
        ...(vars.BERTH_BASE_IMAGE_PYTHON ? { python: vars.BERTH_BASE_IMAGE_PYTHON } : {}),
      },
      sandbox: isOn(vars.BERTH_BUILD_SANDBOX)
        ? {
            user: vars.BERTH_BUILD_USER,
            dir: path.resolve(vars.BERTH_BUILD_DIR),
            memoryMb: vars.BERTH_BUILD_MEMORY_MB,
            cpus: vars.BERTH_BUILD_CPUS,
            pids: vars.BERTH_BUILD_PIDS,
            diskMb: vars.BERTH_BUILD_DISK_MB,
            denyNetworks: (vars.BERTH_BUILD_DENY_NETWORKS ?? '')
              .split(',')
              .map((network) => network.trim())
              .filter(Boolean),
          }
        : undefined,
    },
    provisioning: {
      ...(vars.BERTH_DEPLOYMENT_POSTGRES_URL ? { postgresUrl: vars.BERTH_DEPLOYMENT_POSTGRES_URL } : {}),
      ...(vars.BERTH_DEPLOYMENT_REDIS_URL ? { redisUrl: vars.BERTH_DEPLOYMENT_REDIS_URL } : {}),
      ...(vars.BERTH_DEPLOYMENT_DATABASE_HOST ? { containerHost: vars.BERTH_DEPLOYMENT_DATABASE_HOST } : {}),
      perWorkspace: vars.BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE,
    },
    registry,
  };
}

/**
 * The variables of `ENVIRONMENT`, validated, with defaults filled in. Empty values count as
 * unset; values are trimmed (secrets excepted) and choices compared in lower case. Every
 * problem is reported at once, naming the variable; secrets' values never appear.
 */
function readEnvironment(env: NodeJS.ProcessEnv, problems: string[]): Environment | undefined {
  const properties = ENVIRONMENT.properties as unknown as Record<string, VariableSchema>;
  const given: Record<string, string> = {};
  for (const [name, schema] of Object.entries(properties)) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') continue;
    const value = schema.secret ? raw : raw.trim();
    given[name] = schema.enum ? value.toLowerCase() : value;
  }
  // The validator coerces the strings it is given and fills in defaults, in place.
  const values: Record<string, unknown> = { ...given };
  const validate = environmentValidator();
  if (validate(values)) return values as unknown as Environment;
  for (const issue of (validate.errors ?? []) as ErrorObject[]) {
    const name = issue.instancePath.replace(/^\//, '');
    const schema = properties[name];
    const rule = schema ? ruleOf(schema) : (issue.message ?? 'is invalid');
    problems.push(`${name} ${rule}${schema?.secret ? ' (value not shown)' : ` (got '${given[name]}')`}`);
  }
  return undefined;
}

interface VariableSchema {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  rule?: string;
  secret?: boolean;
}

/** What a variable must be, in words, from its schema. */
function ruleOf(schema: VariableSchema): string {
  if (schema.enum) return `must be one of ${schema.enum.join(', ')}`;
  if (schema.type === 'integer') {
    return schema.maximum === undefined
      ? `must be an integer of at least ${schema.minimum ?? 0}`
      : `must be an integer from ${schema.minimum ?? 0} to ${schema.maximum}`;
  }
  if (schema.rule) return schema.rule;
  return schema.minLength ? `must be at least ${schema.minLength} characters long` : 'is invalid';
}

let validateEnvironment: ValidateFunction | undefined;

/**
 * ENVIRONMENT's validator: every problem reported, strings coerced to the schema's types,
 * defaults filled in, and the annotations the schema carries (`defaultText`, `secret`, `rule`)
 * known to ajv. Its code is generated once and kept (`schema-code-cache.ts`), as the routes'
 * are: compiling it took ~0.2 s of CPU in every process that reads a configuration, and every
 * server reads one. (env-schema did this before; it compiled its own options' schema on import
 * as well, and read nothing here that it was needed for.)
 */
function environmentValidator(): ValidateFunction {
  validateEnvironment ??= cachedValidator(
    { allErrors: true, useDefaults: true, coerceTypes: true, allowUnionTypes: true, keywords: ['defaultText', 'secret', 'rule'] },
    ENVIRONMENT,
  );
  return validateEnvironment;
}

function registrySettings(vars: Environment, problems: string[]): RegistrySettings | undefined {
  const raw = vars.BERTH_REGISTRY;
  if (!raw) return undefined;
  let location;
  try {
    location = parseRegistryLocation(raw);
  } catch (error) {
    if (!(error instanceof RegistryLocationError)) throw error;
    problems.push(error.message);
    return undefined;
  }
  // A registry on this machine is usually plain HTTP; anywhere else it must have a valid certificate.
  const local = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/.test(location.host);
  const keyFile = vars.BERTH_REGISTRY_TOKEN_KEY_FILE;
  const certFile = vars.BERTH_REGISTRY_TOKEN_CERT_FILE;
  if (Boolean(keyFile) !== Boolean(certFile)) problems.push('BERTH_REGISTRY_TOKEN_KEY_FILE and BERTH_REGISTRY_TOKEN_CERT_FILE go together');
  return {
    location,
    tlsVerify: vars.BERTH_REGISTRY_TLS_VERIFY === undefined ? !local : isOn(vars.BERTH_REGISTRY_TLS_VERIFY),
    service: vars.BERTH_REGISTRY_SERVICE,
    issuer: vars.BERTH_REGISTRY_TOKEN_ISSUER,
    ...(keyFile && certFile ? { keyFile, certFile } : {}),
  };
}

/** Names proxy-addr (Fastify's `trustProxy`) gives to the usual private ranges. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** `BERTH_TRUSTED_PROXIES`: comma-separated addresses, CIDR ranges or range names. */
function trustedProxies(raw: string | undefined, problems: string[]): string[] {
  const items = (raw ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  for (const item of items) {
    const [address = '', prefix, ...rest] = item.split('/');
    const family = net.isIP(address);
    const prefixValid = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (!PROXY_RANGE_NAMES.includes(item) && (family === 0 || !prefixValid || rest.length > 0)) {
      problems.push(`BERTH_TRUSTED_PROXIES must list IP addresses, CIDR ranges or ${PROXY_RANGE_NAMES.join(', ')}, separated by commas (got '${item}')`);
    }
  }
  return items;
}

/** The limits of an unconfigured server (tests and tools build apps without a Config). */
export const DEFAULT_LIMITS: RequestLimits = loadConfig({}).limits;
