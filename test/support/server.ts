import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Writable } from 'node:stream';
import type { Config } from '../../src/config.js';
import { DEFAULT_LIMITS, type RequestLimits } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { tempBuildDir } from './build-sandbox.js';
import { deadline } from './deadline.js';
import { testConfig } from './config.js';
import { FakeBuildDriver } from './drivers/fake-build.js';
import { InProcessRuntime } from './drivers/in-process.js';
import type { Berth, BerthOverrides } from '../../src/server.js';
import { migrateToLatest, openDatabase } from '../../src/store/database.js';

export type DatabaseKind = 'sqlite' | 'postgres';

/** The PostgreSQL server tests use; override with TEST_POSTGRES_URL. */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let postgresProbe: Promise<string | null> | undefined;

/** What a refused or unanswerable connection says when nothing listens there at all. */
const ABSENT = new Set(['ECONNREFUSED', 'ENOENT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * Null when PostgreSQL can be used; otherwise why not (tests then skip and say so). Only a
 * server that is not there counts: one that answers slowly (a busy machine) or refuses the
 * login is left to fail the tests that use it, where the cause shows, rather than skip them.
 */
export function postgresUnavailable(): Promise<string | null> {
  postgresProbe ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: deadline(10_000) });
    try {
      await client.connect();
      return null;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      return ABSENT.has(code) ? `no PostgreSQL server at ${POSTGRES_ADMIN_URL} (${(error as Error).message})` : null;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return postgresProbe;
}

/**
 * A throwaway database on the PostgreSQL server; dropped by the returned function. With
 * `migrated`, it is a copy of a database already migrated to the latest schema (see
 * `migratedTemplate`) instead of an empty one.
 */
export async function createPostgresDatabase(
  adminUrl = POSTGRES_ADMIN_URL,
  prefix = 'berth_test',
  options: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const template = options.migrated ? await migratedTemplate(adminUrl) : undefined;
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`));
  return {
    url: databaseUrl(adminUrl, name),
    drop: () => withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}

async function withAdmin<T>(adminUrl: string, use: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.end().catch(() => {});
  }
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const MIGRATIONS_DIR = path.join(import.meta.dirname, '../../src/store/migrations');
let templateName: Promise<string> | undefined;

/** What a migrated database depends on: the migrations, and how a database is opened (SQLite's file settings). */
function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const file of fs.readdirSync(MIGRATIONS_DIR).sort()) hash.update(file).update(fs.readFileSync(path.join(MIGRATIONS_DIR, file)));
  hash.update(fs.readFileSync(path.join(MIGRATIONS_DIR, '../database.ts')));
  return hash.digest('hex').slice(0, 16);
}

const SQLITE_TEMPLATES = path.join(os.tmpdir(), 'berth-test-templates');
let sqliteTemplate: Promise<string> | undefined;

/**
 * Puts a SQLite database migrated to the latest schema at `file`, copied from a template made
 * once per set of migrations (as PostgreSQL's, below): migrating a new SQLite file takes
 * ~0.15 s of CPU and a sync per migration, for every server a test starts. Processes that
 * make the template at once each build their own and rename it into place, so none copies
 * a half-made one.
 */
export async function copyMigratedSqlite(file: string): Promise<void> {
  try {
    fs.copyFileSync(await migratedSqliteTemplate(), file);
  } catch (error) {
    // A run of other migrations (another checkout, or database.ts being edited) removed this
    // one's template as stale: it is made again.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    sqliteTemplate = undefined;
    fs.copyFileSync(await migratedSqliteTemplate(), file);
  }
}

function migratedSqliteTemplate(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const template = path.join(SQLITE_TEMPLATES, `berth-${migrationsHash()}.sqlite`);
    if (fs.existsSync(template)) return template;
    fs.mkdirSync(SQLITE_TEMPLATES, { recursive: true });
    const building = `${template}.${process.pid}-${randomUUID().slice(0, 8)}`;
    const db = openDatabase({ kind: 'sqlite', file: building });
    try {
      await migrateToLatest(db);
    } finally {
      // Closing the last connection checkpoints the WAL into the file and removes it.
      await db.destroy();
    }
    fs.renameSync(building, template);
    for (const name of fs.readdirSync(SQLITE_TEMPLATES)) {
      if (/^berth-[0-9a-f]{16}\.sqlite$/.test(name) && name !== path.basename(template)) fs.rmSync(path.join(SQLITE_TEMPLATES, name), { force: true });
    }
    return template;
  })();
  sqliteTemplate.catch(() => (sqliteTemplate = undefined));
  return sqliteTemplate;
}

/**
 * The name of a database migrated to the latest schema, made once per server and set of
 * migrations: running the migrations takes about half a second a database, hundreds of times
 * in a run, where copying a template (CREATE DATABASE … TEMPLATE) is a file copy. The name
 * carries a hash of the migrations' sources, so a changed migration makes a new template;
 * test processes running side by side make it once, under an advisory lock.
 */
function migratedTemplate(adminUrl: string): Promise<string> {
  templateName ??= (async () => {
    const name = `berth_template_${migrationsHash()}`;
    await withAdmin(adminUrl, async (admin) => {
      await admin.query(`SELECT pg_advisory_lock(hashtext($1))`, [name]);
      const { rowCount } = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name]);
      if (rowCount) return;
      // Migrated under another name and renamed, so no one copies a half-migrated template.
      const building = `${name}_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
      await admin.query(`CREATE DATABASE ${building}`);
      const db = openDatabase({ kind: 'postgres', url: databaseUrl(adminUrl, building) });
      try {
        await migrateToLatest(db);
      } finally {
        await db.destroy();
      }
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      await dropOtherTemplates(admin, name);
    });
    return name;
  })();
  templateName.catch(() => (templateName = undefined));
  return templateName;
}

/**
 * Templates of earlier sets of migrations are dropped when a new one is made, so that they do
 * not pile up on the machine. One in use (a checkout of another tree copying it now) refuses
 * the drop and is left; that tree makes it again if it is gone when it next needs it.
 */
async function dropOtherTemplates(admin: pg.Client, keep: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^berth_template_[0-9a-f]{16}$' AND datname <> $1`, [
    keep,
  ]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => {});
}

export interface TestServer {
  kind: DatabaseKind;
  url: string;
  berth: Berth;
  /** Admin key bound to the `default` workspace, as created on first start. */
  adminKey: string;
  workspaceId: string;
  organizationId: string;
  dataDir: string;
  /** Every log line the server wrote, for tests that check what reaches the logs. */
  logs: string[];
  runtime: import('../../src/engine/drivers/types.js').RuntimeDriver;
  close(): Promise<void>;
}

/** A real Berth on a random port over a fresh database of the given kind. */
export interface TestServerOptions {
  /** Run the engine in the server (default true). */
  engine?: boolean;
  overrides?: BerthOverrides;
  /** Reuse a database (several servers on one PostgreSQL); the caller drops it. */
  postgresUrl?: string;
  bootstrapApiKey?: string;
  /** BERTH_ENCRYPTION_KEY; servers sharing a database must share it (default: one per data directory). */
  encryptionKey?: string;
  limits?: Partial<RequestLimits>;
  /** BERTH_REVISIONS_KEPT (default 100). */
  revisionsKept?: number;
  /** BERTH_GIT_POLL_SECONDS (default 0: no poller). */
  gitPollSeconds?: number;
  /** BERTH_METRICS_TOKEN (default: none, /metrics open). */
  metricsToken?: string;
  /** Per-deployment databases (BERTH_DEPLOYMENT_POSTGRES_URL / _REDIS_URL, BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE). */
  provisioning?: Partial<Config['provisioning']>;
  /** More settings, read as Berth reads its environment (e.g. BERTH_REGISTRY with a PORT fixed in advance). */
  env?: Record<string, string>;
  /** Build with what BERTH_BUILDER chooses (`runners`, say) instead of the fake builder. */
  configuredBuilder?: boolean;
}

/**
 * A real Berth on a random port over a fresh database of the given kind. Its engine runs
 * revisions with the in-process runtime (real HTTP health checks, no containers) and the
 * fake builder, with short leases so takeover tests stay quick.
 */
export async function startTestServer(kind: DatabaseKind, options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-test-'));
  // Never the host's /var/lib/berth-build: a test that builds mounts workspaces' disks here, released on close.
  const builds = await tempBuildDir();
  const postgres =
    kind === 'postgres'
      ? options.postgresUrl
        ? { url: options.postgresUrl, drop: async () => {} }
        : await createPostgresDatabase(undefined, undefined, { migrated: true })
      : undefined;
  const adminKey = options.bootstrapApiKey ?? `berth_test_${randomUUID()}`;
  const runtime = options.overrides?.runtime ?? new InProcessRuntime();
  const config: Config = testConfig(
    {
      PORT: '0',
      BERTH_DATA_DIR: dataDir,
      BERTH_BUILD_DIR: builds.path,
      BERTH_BOOTSTRAP_API_KEY: adminKey,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
      BERTH_ENGINE: options.engine === false ? 'off' : 'on',
      BERTH_CONTAINER_RUNTIME: 'none',
      BERTH_BUILDER: 'none',
      BERTH_REVISIONS_KEPT: String(options.revisionsKept ?? 100),
      BERTH_GIT_POLL_SECONDS: String(options.gitPollSeconds ?? 0),
      ...(options.encryptionKey ? { BERTH_ENCRYPTION_KEY: options.encryptionKey } : {}),
      ...(options.metricsToken ? { BERTH_METRICS_TOKEN: options.metricsToken } : {}),
      ...(postgres ? { DATABASE_URL: postgres.url } : {}),
      ...options.env,
    },
    { limits: { ...DEFAULT_LIMITS, ...options.limits } },
  );
  // Provisioning only where a test asks for it, with the configured defaults for what it leaves out.
  config.provisioning = { perWorkspace: config.provisioning.perWorkspace, ...options.provisioning };
  if (config.database.kind === 'sqlite' && !fs.existsSync(config.database.file)) await copyMigratedSqlite(config.database.file);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(chunk.toString());
      callback();
    },
  });
  let berth: Berth | undefined;
  // Every step runs even when one before it fails: a failed start or close leaves nothing behind.
  const release = () =>
    inTurn(
      () => berth?.close(),
      () => (runtime instanceof InProcessRuntime ? runtime.closeAll() : undefined),
      () => postgres?.drop(),
      () => builds.remove(),
      () => fs.rmSync(dataDir, { recursive: true, force: true }),
    );
  try {
    // Imported here: the files that take only a database from this module (test/support/database.ts) need not load the server.
    const { startBerth } = await import('../../src/server.js');
    berth = await startBerth(config, createLogger(config.logLevel, sink), {
      ...(options.configuredBuilder ? {} : { builder: new FakeBuildDriver() }),
      ...options.overrides,
      runtime,
      engineSettings: { leaseMs: 3000, sweepMs: 250, ...options.overrides?.engineSettings },
    });
  } catch (error) {
    await release().catch(() => {});
    throw error;
  }
  const address = berth.address;
  const principal = await berth.services.tenancy.authenticate(adminKey);
  if (!principal?.boundWorkspaceId) {
    await release().catch(() => {});
    throw new Error('bootstrap did not create a bound admin key');
  }
  return {
    kind,
    url: address,
    berth,
    adminKey,
    workspaceId: principal.boundWorkspaceId,
    organizationId: principal.organizationId,
    dataDir,
    logs,
    runtime,
    close: release,
  };
}

/** Runs every step, in order, then throws the first error any of them threw. */
async function inTurn(...steps: (() => unknown)[]): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors[0];
}
