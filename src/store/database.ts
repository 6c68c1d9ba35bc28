import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, type KyselyConfig, Migrator, PostgresDialect, SqliteAdapter, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import { startCheckpointer } from './checkpointer.js';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
/** Repositories take either the database or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

/** SQL texts that run as named prepared statements on PostgreSQL, with their names. */
const NAMED_STATEMENTS = new Map<string, string>();

/**
 * Marks a query text (of fixed shape, with an explicit column list) to be parsed and planned
 * once per PostgreSQL connection instead of on every run. See prepared.ts.
 */
export function prepareOnPostgres(text: string): void {
  if (!NAMED_STATEMENTS.has(text)) NAMED_STATEMENTS.set(text, `berth_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
}

/**
 * node-postgres prepares a statement once per connection when a query carries a `name`;
 * Kysely sends only text and values, so this client adds the name to the texts marked above.
 * It also marks what its connection and its queries fail with as the database's own
 * failures (isDatabaseUnavailable).
 */
class NamedStatementClient extends pg.Client {
  override connect(...args: unknown[]): never {
    const connect = super.connect as unknown as (...a: unknown[]) => never;
    const [callback] = args;
    // The pool connects with a callback; a client alone with a promise.
    if (typeof callback === 'function') return connect.call(this, (error: unknown) => (callback as (e: unknown) => void)(error && fromDatabase(error)));
    return markRejection(connect.call(this));
  }

  override query(...args: unknown[]): never {
    const [text, values] = args;
    const name = typeof text === 'string' && args.length === 2 && Array.isArray(values) ? NAMED_STATEMENTS.get(text) : undefined;
    const plain = super.query as unknown as (...a: unknown[]) => never;
    return markRejection(name ? plain.call(this, { name, text, values }) : plain.apply(this, args));
  }
}

function markRejection<T>(result: T): T {
  const then = (result as { then?: unknown } | undefined)?.then;
  if (typeof then !== 'function') return result;
  return (result as Promise<unknown>).catch((error: unknown) => {
    throw fromDatabase(error);
  }) as T;
}

/** Errors raised by Berth's own PostgreSQL connections. */
const FROM_DATABASE = new WeakSet<object>();

function fromDatabase<T>(error: T): T {
  if (typeof error === 'object' && error !== null) FROM_DATABASE.add(error);
  return error;
}

/**
 * `log` sees every statement sent, transaction control included (tests count them).
 * `checkpointInBackground`: for the server's long-lived database, WAL checkpoints run on a
 * thread of their own (store/checkpointer.ts) instead of inside the commit that crosses the
 * threshold; `onError` hears when they fail. `onConnectionLost`: a PostgreSQL connection
 * ended by the server (a restart, a failover, an administrator), in use or idle.
 */
export function openDatabase(
  database: Config['database'],
  options: {
    log?: KyselyConfig['log'];
    checkpointInBackground?: { onError: (error: Error) => void };
    onConnectionLost?: (error: Error) => void;
  } = {},
): Db {
  if (database.kind === 'postgres') {
    const pool = new pg.Pool({ connectionString: database.url, max: 10, Client: NamedStatementClient });
    const lost = options.onConnectionLost ?? (() => {});
    // A client that loses its connection emits 'error', and without a listener that crashes
    // the process. The pool listens only while a client is idle; one lent out (to a
    // transaction between its statements) had none, and a PostgreSQL restart stopped Berth.
    // Its statements then fail, and the pool drops it once it is given back.
    pool.on('connect', (client) => client.on('error', lost));
    pool.on('error', () => {});
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: options.log });
  }
  fs.mkdirSync(path.dirname(database.file), { recursive: true, mode: 0o700 });
  const sqlite = cacheStatements(new SQLite(database.file));
  secureDatabaseFiles(database.file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma(`wal_autocheckpoint = ${options.checkpointInBackground ? BACKSTOP_CHECKPOINT_PAGES : CHECKPOINT_PAGES}`);
  if (options.checkpointInBackground) startCheckpointer(sqlite, database.file, options.checkpointInBackground.onError);
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: options.log });
}

/**
 * With checkpoints in the background (store/checkpointer.ts), the commit-time checkpoint
 * stays as a backstop: should that thread fall behind or die, and to start the WAL over
 * when commits never pause long enough for the thread to. The thread has by then copied
 * almost every frame, so this checkpoint has little left to do.
 */
const BACKSTOP_CHECKPOINT_PAGES = 10_000;

/**
 * WAL pages between checkpoints (SQLite's default is 1,000). A checkpoint copies the WAL
 * into the database file and fsyncs both, inside the commit that crosses the threshold,
 * blocking the event loop for 10–30 ms; under a stream of creates (about 15 pages each)
 * that was a fifth of the server's time. Pages written again and again (index roots,
 * the newest leaves) are copied once per checkpoint, so fewer, larger checkpoints do less
 * work in all: about a quarter less CPU per create (bench/results.md), for a WAL of up to
 * about 16 MB and pauses of up to ~60 ms instead of ~30 ms. Durability is unchanged.
 */
const CHECKPOINT_PAGES = 4_000;

/** Compiled statements kept per SQL text; the least recently used go beyond this many. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query it runs, and better-sqlite3 compiles the SQL on each
 * prepare: about half of a simple query's cost (bench/results.md). The same SQL text gets
 * the compiled statement back instead. Safe because Kysely binds fresh parameters on each
 * run and better-sqlite3 resets a statement after `all`/`run`; a statement that is still
 * iterating (a streamed query) is `busy`, and then a fresh one is compiled for the caller.
 * SQLite recompiles a cached statement by itself when the schema changes (migrations).
 */
function cacheStatements(sqlite: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = sqlite.prepare.bind(sqlite);
  sqlite.prepare = ((source: string) => {
    const cached = cache.get(source);
    if (cached && !cached.busy) {
      // Most recently used last: a Map iterates in insertion order.
      cache.delete(source);
      cache.set(source, cached);
      return cached;
    }
    const statement = withFastRows(prepare(source), source);
    if (!cached) {
      cache.set(source, statement);
      if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    }
    return statement;
  }) as SQLite.Database['prepare'];
  return sqlite;
}

/**
 * better-sqlite3 builds each row object by setting its columns one by one, which costs a
 * page of 20 deployments joined to their revisions (32 columns) about 90 µs more than
 * reading the same rows as arrays (bench/results.md). For a query that names its columns,
 * `all` reads arrays and turns each into an object with a constructor compiled for that
 * column list, the same keys in the same order (a duplicate name keeps the last value, as
 * better-sqlite3 does). Not for `*` queries: their columns can change under a cached
 * statement when a migration alters the table, while a named list is fixed by the text.
 */
function withFastRows(statement: SQLite.Statement, source: string): SQLite.Statement {
  if (!statement.reader || source.includes('*')) return statement;
  const names = statement.columns().map((column) => column.name);
  // In an object literal `__proto__` would set the prototype instead of a key.
  if (names.length === 0 || names.includes('__proto__')) return statement;
  // A constructor per column list gives every row one hidden class, built in a single step.
  const toRow = new Function('values', `return {${names.map((name, i) => `${JSON.stringify(name)}: values[${i}]`).join(', ')}};`) as (
    values: unknown[],
  ) => Record<string, unknown>;
  const all = statement.all.bind(statement) as (...params: unknown[]) => unknown[];
  statement.all = ((...params: unknown[]) => {
    statement.raw(true);
    try {
      return (all(...params) as unknown[][]).map(toRow);
    } finally {
      statement.raw(false);
    }
  }) as SQLite.Statement['all'];
  return statement;
}

/** Runs pending migrations. On PostgreSQL, Kysely takes a lock so concurrent starts are safe. */
export async function migrateToLatest(db: Db): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/** True for a violated UNIQUE or PRIMARY KEY constraint on either database. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * Failures of the database rather than of the request: a connection lost or refused
 * (PostgreSQL restarting, failing over, unreachable, out of connections) or a lock held past
 * SQLite's busy timeout. Trying again shortly may well succeed, so they are answered as such
 * (http/errors.ts) instead of as an unexplained 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'))) return true;
  // A refused connection or a SQLSTATE may come from any other connection too (another
  // PostgreSQL server that provisions deployments' databases, a code host, a registry):
  // those are not this database being unavailable.
  if (typeof error !== 'object' || error === null || !FROM_DATABASE.has(error)) return false;
  if (typeof code === 'string') {
    // SQLSTATE class 08 (connection exception); 57P01–57P03 (shut down, crashed, starting);
    // 53300 (too many connections).
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[1-3]$/.test(code) || code === '53300') return true;
    if (NETWORK_FAILURES.has(code)) return true;
  }
  // node-postgres says so in words only when the socket closes under it.
  return typeof message === 'string' && /^Connection terminated( unexpectedly| due to connection timeout)?$/.test(message);
}

const NETWORK_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function nowIso(): string {
  return new Date().toISOString();
}

/** The database and its WAL and shared-memory files are Berth's alone (SQLite gives the last two the database file's mode). */
function secureDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      fs.chmodSync(`${file}${suffix}`, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}

/** For the few statements written differently for each database. */
export function isSqlite(db: Executor): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}
