import { type Static, type TSchema, Type } from 'typebox';

/**
 * Every environment variable Berth reads, in one schema: its type, default and meaning.
 * `loadConfig` validates the environment against it, and the README's configuration table
 * is this schema written out (`npm run docs:config`; a test keeps them equal). Annotations
 * of our own: `defaultText` says what happens when a variable without a default is unset,
 * `secret` keeps its value out of every error message, `rule` says what a pattern requires.
 */
interface Annotations {
  description: string;
  defaultText?: string;
  secret?: true;
}

/** Patterns say in words what they require (`rule`), for error messages. */
type Pattern = { pattern: string; rule: string };

const Integer = (fallback: number | undefined, minimum: number, maximum: number | undefined, notes: Annotations) =>
  Type.Integer({ minimum, ...(maximum === undefined ? {} : { maximum }), ...(fallback === undefined ? {} : { default: fallback }), ...notes });
const Text = (fallback: string | undefined, notes: Annotations, options: Partial<Pattern> & { minLength?: number } = {}) =>
  Type.String({ ...(fallback === undefined ? {} : { default: fallback }), ...options, ...notes });
const Choice = <const T extends readonly string[]>(values: T, fallback: T[number] | undefined, notes: Annotations) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(fallback === undefined ? {} : { default: fallback }), ...notes });
const Switch = (fallback: 'on' | 'off', notes: Annotations) => Choice(SWITCH_VALUES, fallback, notes);
const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);

export const SWITCH_VALUES = ['on', 'off', 'true', 'false', '1', '0', 'yes', 'no'] as const;
export const isOn = (value: (typeof SWITCH_VALUES)[number]) => ['on', 'true', '1', 'yes'].includes(value);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export const RUNTIMES = ['auto', 'podman', 'docker', 'none'] as const;
export const BUILDERS = ['auto', 'buildah', 'podman', 'docker', 'none', 'runners'] as const;

/**
 * Keys are stored as unsalted SHA-256 digests, so a configured key must be too long to
 * guess from its digest: 32 random characters are far beyond any search.
 */
const MIN_SECRET_LENGTH = 32;

export const ENVIRONMENT = Type.Object({
  PORT: Integer(8124, 0, 65535, { description: 'HTTP port' }),
  HOST: Text('127.0.0.1', { description: 'address to listen on' }),
  DATABASE_URL: optional(
    Text(
      undefined,
      { description: '`postgres://…` for server mode; `sqlite:<file>` for another SQLite file', defaultText: 'SQLite in the data directory', secret: true },
      { pattern: '^(postgres(ql)?://|sqlite:)', rule: "must start with 'postgres://', 'postgresql://' or 'sqlite:'" },
    ),
  ),
  BERTH_DATA_DIR: Text('./data', { description: 'SQLite database, generated encryption key, bootstrap key file, uploads' }),
  BERTH_BOOTSTRAP_API_KEY: optional(
    Text(
      undefined,
      { description: `the first admin key, on first start only (at least ${MIN_SECRET_LENGTH} characters)`, defaultText: 'generated', secret: true },
      { minLength: MIN_SECRET_LENGTH },
    ),
  ),
  BERTH_ENCRYPTION_KEY: optional(
    Text(undefined, {
      description: '32 bytes as 64 hex characters or base64; encrypts secrets at rest (AES-256-GCM). Set it in server mode so every replica shares it',
      defaultText: 'key file in the data directory',
      secret: true,
    }),
  ),
  BERTH_NEW_ENCRYPTION_KEY: optional(
    Text(undefined, {
      description: 'the key `berth rotate-encryption-key` re-encrypts everything with (see docs/operations.md)',
      defaultText: 'none',
      secret: true,
    }),
  ),
  BERTH_ENGINE: Switch('on', { description: '`off` runs the API only; run `berth engine` (`npm run engine`) elsewhere' }),
  BERTH_ENGINE_CONCURRENCY: Integer(4, 1, 64, {
    description: 'deployments one process works on at once (a build on a runner does not count while the runner builds)',
  }),
  BERTH_ENGINE_WORKSPACE_SLOTS: optional(
    Integer(undefined, 1, 64, {
      description:
        "deployments of one workspace the engine works on at once (builds, deploys, deletes), counted over every engine process; a workspace's further revisions wait QUEUED, saying so, and free slots go to the workspace that waited longest",
      defaultText: 'BERTH_ENGINE_CONCURRENCY − 1 (at least 1)',
    }),
  ),
  BERTH_MAX_BUILD_TIMEOUT_SECONDS: Integer(3600, 1, 86400, {
    description: "the longest a build may run, whatever a deployment's `build_timeout_seconds` asks (larger values are clamped, with a line in the build log)",
  }),
  BERTH_MAX_DEPLOY_TIMEOUT_SECONDS: Integer(1800, 1, 86400, {
    description: "the longest a deploy may take, whatever a deployment's `deploy_timeout_seconds` asks (clamped likewise)",
  }),
  BERTH_CONTAINER_RUNTIME: Choice(RUNTIMES, 'auto', { description: '`podman`, `docker`, `auto` (podman, then docker) or `none`' }),
  BERTH_CONTAINER_NETWORK: Choice(['bridge', 'host'] as const, 'bridge', {
    description: '`bridge` publishes each agent server on a loopback port; `host` runs it on the host network (needed to reach databases on 127.0.0.1)',
  }),
  BERTH_STANDBY_SECONDS: Integer(900, 0, 86400, {
    description:
      'how long a container another revision replaced is kept paused (no CPU, its memory kept) so a rollback to its revision resumes it in about a second; 0 removes it at once',
  }),
  BERTH_STANDBY_PER_DEPLOYMENT: Integer(1, 1, 16, { description: 'standby containers kept per deployment (the oldest go first)' }),
  LOG_LEVEL: Choice(LOG_LEVELS, 'info', { description: LOG_LEVELS.map((level) => `\`${level}\``).join(', ') }),
  BERTH_LOG_FORMAT: Choice(LOG_FORMATS, 'auto', {
    description: '`json`: one JSON object per line; `pretty`: readable, coloured lines; `auto`: pretty when standard output is a terminal, else JSON',
  }),
  BERTH_RATE_LIMIT_PER_MINUTE: Integer(6000, 0, undefined, {
    description:
      'requests per minute per API key (0 turns it off); also the budget of failed authentications per client address: past it, wrong keys ' +
      'from that address get 429 instead of 401 while valid keys still work; keys of the shape Berth generates (256 random bits) are still ' +
      'looked up, others only if they authenticated on this server in the last hour',
  }),
  BERTH_TRUSTED_PROXIES: optional(
    Text(undefined, {
      description:
        'comma-separated addresses or CIDR ranges (or `loopback`, `linklocal`, `uniquelocal`) of reverse proxies whose `X-Forwarded-For` ' +
        'names the client; per-address limits then count each client behind the proxy apart. Without it `X-Forwarded-For` is ignored',
      defaultText: 'none',
    }),
  ),
  BERTH_BODY_LIMIT_BYTES: Integer(1024 * 1024, 1024, undefined, { description: 'largest request body (413 beyond)' }),
  BERTH_REQUEST_TIMEOUT_MS: Integer(30_000, 1000, undefined, { description: 'time a client has to send its whole request (408 beyond)' }),
  BERTH_RESPONSE_WRITE_TIMEOUT_MS: Integer(30_000, 1000, undefined, {
    description:
      'time an answer may take to be written out (from its start; for event streams, each pause of the client); a client that does not ' +
      'read it in time is disconnected, so it cannot pin the answer in memory',
  }),
  BERTH_WEBHOOK_BODY_LIMIT_BYTES: Integer(5 * 1024 * 1024, 1024, 25 * 1024 * 1024, {
    description: "largest code-host webhook body (413 beyond; GitHub's own cap is 25 MB, a push payload is a few kB and ~1 kB per commit listed)",
  }),
  BERTH_WEBHOOK_CONCURRENT_BODIES: Integer(16, 1, 1024, {
    description: 'webhook bodies read at once, before their signature can be checked (503 with Retry-After beyond); one workspace gets at most half',
  }),
  BERTH_METRICS_TOKEN: optional(
    Text(
      undefined,
      {
        description:
          'bearer token `GET /metrics` requires (at least 16 characters); open without it, and then naming no tenant (figures per listener only with it)',
        defaultText: 'none',
        secret: true,
      },
      { minLength: 16 },
    ),
  ),
  BERTH_ENGINE_METRICS_PORT: optional(
    Integer(undefined, 1, 65535, { description: 'port on which `berth engine` serves `/metrics` and `/ok`', defaultText: 'none' }),
  ),
  BERTH_AUDIT_RETENTION_DAYS: Integer(365, 1, undefined, {
    description: 'days the audit log keeps a row; older rows are removed hourly by the engine',
  }),
  BERTH_WEBHOOK_DELIVERY_RETENTION_DAYS: Integer(30, 1, undefined, {
    description:
      'days an outbound webhook delivery is listed (with its attempts) after it was made; older finished ones are removed hourly by the engine (a pending one never is)',
  }),
  BERTH_OUTBOUND_ALLOW_PRIVATE: Switch('off', {
    description:
      'outbound webhooks may go to loopback, link-local and private addresses (RFC 1918, ULA, CGNAT, …); `off` refuses them at subscription and at each delivery',
  }),
  BERTH_PREVIEWS_ALLOW_FORKS: Switch('off', {
    description:
      'pull requests from forks may get preview deployments (never with secrets) where the deployment also allows them (`previews.allow_forks`); `off` gives them none',
  }),
  BERTH_REVISIONS_KEPT: Integer(100, 2, undefined, {
    description: 'revisions kept per deployment; older finished ones are removed with their logs (never the active or the latest)',
  }),
  BERTH_IDEMPOTENCY_KEY_HOURS: Integer(24, 1, 720, {
    description: 'hours an `Idempotency-Key` and the first answer to it are kept; a retry within them replays that answer',
  }),
  BERTH_SESSION_HOURS: Integer(12, 1, 720, {
    description: 'hours a dashboard session (`POST /v1/sessions`) lasts from sign-in; it ends sooner at sign-out or when its key is revoked',
  }),
  BERTH_PUBLIC_URL: optional(
    Text(
      undefined,
      {
        description: "Berth's address as clients and code hosts reach it, for the links it hands out (upload URLs, webhook URLs)",
        defaultText: 'taken from each request',
      },
      { pattern: '^https?://[^/\\s]+(/\\S*)?$', rule: 'must be an http:// or https:// URL' },
    ),
  ),
  BERTH_GIT_ALLOW_LOCAL: Switch('on', {
    description: '`git` integrations may name repositories on the Berth host (absolute paths, `file://`); `off` refuses them',
  }),
  BERTH_GIT_POLL_SECONDS: Integer(0, 0, undefined, { description: 'how often `git` integrations are asked for new commits, for build on push; 0 never asks' }),
  BERTH_GIT_CONCURRENCY: Integer(8, 1, 256, {
    description: 'git processes one Berth process runs at once (listings, polls, fetches, checkouts); more wait for a free one',
  }),
  BERTH_GIT_TIMEOUT_SECONDS: Integer(30, 1, 3600, {
    description:
      'time one git command that asks a remote for its refs (listing repositories, polling) may take before its process group is killed; ' +
      'a whole listing may take twice this (504 beyond)',
  }),
  BERTH_UPLOAD_PENDING_BYTES_PER_DEPLOYMENT: Integer(512 * 1024 * 1024, 1024, undefined, {
    description: 'bytes of uploaded project archives a deployment may hold before they are built or expire, those being received included (413 beyond)',
  }),
  BERTH_UPLOAD_PENDING_BYTES_PER_WORKSPACE: Integer(2 * 1024 * 1024 * 1024, 1024, undefined, {
    description: 'the same, for all deployments of a workspace together',
  }),
  BERTH_BUILDER: Choice(BUILDERS, 'auto', {
    description:
      'what builds images from code: `buildah`, `podman`, `docker`, `auto` (the first found), `none` (code-host builds fail) or `runners` (`berth builder` processes build them, never this one; docs/build-runners.md)',
  }),
  BERTH_RUNNER_WAIT_SECONDS: Integer(600, 5, 86400, {
    description: 'with BERTH_BUILDER=runners: how long a build waits for a runner to take it before it fails',
  }),
  BERTH_RUNNER_LEASE_SECONDS: Integer(30, 3, 600, {
    description: 'with BERTH_BUILDER=runners: a runner that does not heartbeat within this loses its build to another runner',
  }),
  BERTH_BASE_IMAGE_NODE: optional(
    Text(undefined, {
      description: "base image for JavaScript graphs, instead of the LangGraph CLI's (tagged as the CLI tags them)",
      defaultText: 'langchain/langgraphjs-api',
    }),
  ),
  BERTH_BASE_IMAGE_PYTHON: optional(
    Text(undefined, { description: "base image for Python graphs, instead of the LangGraph CLI's", defaultText: 'langchain/langgraph-api' }),
  ),
  BERTH_BUILD_SANDBOX: Switch('on', {
    description:
      'builds run as the unprivileged build user in a user namespace, each step in a container of its own, with the limits below (docs/security.md); `off` runs them as Berth itself, for a single trusted user only',
  }),
  BERTH_BUILD_USER: Text('berth-build', {
    description: 'the unprivileged user builds run as; needs /etc/subuid and /etc/subgid ranges (scripts/setup-containers.sh creates it)',
  }),
  BERTH_BUILD_DIR: Text('/var/lib/berth-build', {
    description: "the build user's image stores, caches and build contexts, one set per workspace (outside the data directory, which only Berth reads)",
  }),
  BERTH_BUILD_MEMORY_MB: Integer(4096, 128, undefined, { description: 'memory one build may use, its steps included; past it the build fails' }),
  BERTH_BUILD_CPUS: Integer(2, 1, 256, { description: 'CPUs one build may use' }),
  BERTH_BUILD_PIDS: Integer(2048, 64, undefined, { description: 'processes and threads one build may run at once' }),
  BERTH_BUILD_DISK_MB: Integer(20480, 0, undefined, {
    description: "disk one workspace's builds may fill (its image store, caches and build contexts, as a file system of that size); 0 leaves it unbounded",
  }),
  BERTH_BUILD_DENY_NETWORKS: optional(
    Text(
      undefined,
      {
        description: "comma-separated networks (CIDR) builds may not reach, besides this host's own addresses, loopback and link-local, which they never reach",
        defaultText: 'none',
      },
      {
        pattern: '^\\s*[0-9a-fA-F:.]+/[0-9]{1,3}\\s*(,\\s*[0-9a-fA-F:.]+/[0-9]{1,3}\\s*)*$',
        rule: 'must be CIDR networks separated by commas, such as 10.0.0.0/8,fd00::/8',
      },
    ),
  ),
  BERTH_DEPLOYMENT_POSTGRES_URL: optional(
    Text(
      undefined,
      {
        description: 'PostgreSQL admin connection (CREATEDB, CREATEROLE): each deployment gets a database and role of its own, as `POSTGRES_URI`',
        defaultText: 'none',
        secret: true,
      },
      { pattern: '^postgres(ql)?://', rule: 'must start with postgres:// or postgresql://' },
    ),
  ),
  BERTH_DEPLOYMENT_REDIS_URL: optional(
    Text(
      undefined,
      {
        description:
          'Redis admin connection (ACL, SCAN, UNLINK): each deployment gets an ACL user limited to a key prefix of its own, as `REDIS_URI` ' +
          "and `REDIS_KEY_PREFIX`; the server's `default` user must not be usable without a password",
        defaultText: 'none',
        secret: true,
      },
      { pattern: '^rediss?://', rule: 'must start with redis:// or rediss://' },
    ),
  ),
  BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE: Integer(100, 1, undefined, {
    description:
      'deployments of one workspace that may have a provisioned PostgreSQL database at once (and as many a Redis user); beyond it a new ' +
      'deployment is refused (409 `database_limit_reached`), or its revision ends `CREATE_FAILED`, naming this limit',
  }),
  BERTH_DEPLOYMENT_DATABASE_HOST: optional(
    Text(undefined, { description: 'the host agent containers reach those two servers by, when not the host in their URLs', defaultText: "the URLs' host" }),
  ),
  BERTH_REGISTRY: optional(
    Text(undefined, {
      description: 'image registry built and pushed images go to, as `host[:port][/prefix]` (see docs/registry.md)',
      defaultText: 'none: images stay local',
    }),
  ),
  BERTH_REGISTRY_TLS_VERIFY: optional(
    Choice(SWITCH_VALUES, undefined, { description: "verify the registry's TLS certificate", defaultText: '`off` for a registry on this machine, else `on`' }),
  ),
  BERTH_REGISTRY_SERVICE: Text('berth-registry', { description: 'the `service` the registry and its tokens name' }),
  BERTH_REGISTRY_TOKEN_ISSUER: Text('berth', { description: 'the issuer of registry tokens' }),
  BERTH_REGISTRY_TOKEN_KEY_FILE: optional(
    Text(undefined, { description: 'PEM private key that signs registry tokens (with the next)', defaultText: 'generated in the data directory' }),
  ),
  BERTH_REGISTRY_TOKEN_CERT_FILE: optional(
    Text(undefined, { description: "its certificate, which the registry's `auth.token.rootcertbundle` names", defaultText: 'generated in the data directory' }),
  ),
});

export type Environment = Static<typeof ENVIRONMENT>;
