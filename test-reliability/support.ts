/**
 * Shared helpers of the reliability suite: seeded randomness, read-only database access,
 * table snapshots, the API's error form and the OpenAPI document's operations.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../src/store/schema.js';
import { ERROR_CODES } from '../src/domain/errors.js';
import type { ApiResponse } from '../test/support/http.js';
import { deadline } from '../test/support/deadline.js';

export type Db = Kysely<Database>;

/** Seed of this run: RELIABILITY_SEED=<n> replays one. Printed so a failure can be replayed. */
export function runSeed(): number {
  const fromEnv = Number(process.env.RELIABILITY_SEED);
  const seed = Number.isInteger(fromEnv) && process.env.RELIABILITY_SEED ? fromEnv : (Date.now() ^ (process.pid << 8)) >>> 0;
  return seed;
}

/** mulberry32: a small seeded PRNG, good enough to pick kill points and operations. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A SQLite file opened read-only (the server must have stopped, so the WAL is checkpointed). */
export function openSqliteReadonly(file: string): Db {
  const database = new SQLite(file, { readonly: true, fileMustExist: true });
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
}

export function openPostgres(url: string): Db {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

export function dialectOf(db: Db): 'sqlite' | 'postgres' {
  return db.getExecutor().adapter.constructor.name.toLowerCase().includes('sqlite') ? 'sqlite' : 'postgres';
}

/** Every table of the database, so tables added later are covered without editing this suite. */
export async function tableNames(db: Db): Promise<string[]> {
  if (dialectOf(db) === 'sqlite') {
    const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(db);
    return rows.map((r) => r.name);
  }
  const { rows } = await sql<{
    name: string;
  }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(
    db,
  );
  return rows.map((r) => r.name);
}

export async function allRows(db: Db, table: string): Promise<Record<string, unknown>[]> {
  const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db);
  return rows;
}

/** Rows in a stable order and form, whichever database and whatever order they came in. */
function canonicalRows(rows: Record<string, unknown>[]): string[] {
  return rows
    .map((row) =>
      JSON.stringify(
        Object.keys(row)
          .sort()
          .map((key) => [key, normalise(row[key])]),
      ),
    )
    .sort();
}

function normalise(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  // PostgreSQL answers bigint columns as strings; SQLite as numbers.
  if (typeof value === 'string' && /^\d+$/.test(value) && value.length < 16) return Number(value);
  return value;
}

export interface Snapshot {
  counts: Record<string, number>;
  /** Content digest per table; full rows for the tables named in `keepRows`. */
  digests: Record<string, string>;
  rows: Record<string, string[]>;
}

/** Row counts and a digest of the contents of every table (full rows of `keepRows`, to show a difference). */
export async function snapshot(db: Db, keepRows: string[] = ['deployments', 'revisions']): Promise<Snapshot> {
  return refreshSnapshot(db, { counts: {}, digests: {}, rows: {} }, await contentTables(db), keepRows);
}

/** A copy of `base` with the tables named read again (the others as they were in `base`). */
export async function refreshSnapshot(db: Db, base: Snapshot, tables: readonly string[], keepRows: string[] = ['deployments', 'revisions']): Promise<Snapshot> {
  const result: Snapshot = { counts: { ...base.counts }, digests: { ...base.digests }, rows: { ...base.rows } };
  for (const table of tables) {
    const rows = canonicalRows(await allRows(db, table));
    result.counts[table] = rows.length;
    result.digests[table] = createHash('sha256').update(rows.join('\n')).digest('hex');
    if (keepRows.includes(table)) result.rows[table] = rows;
  }
  return result;
}

async function contentTables(db: Db): Promise<string[]> {
  return (await tableNames(db)).filter((table) => !table.startsWith('kysely_migration'));
}

/**
 * Cheap marks that move whenever a table's contents may have changed (a false alarm is allowed,
 * a miss is not), so that a snapshot reads again only what a request may have written.
 * SQLite has one mark for the whole database (`*`): the connection's own row changes
 * (`total_changes()`, triggers included) and every other connection's commits (`data_version`).
 * PostgreSQL has one per table: its row count and the newest row version's transaction id (an
 * insert or an update makes a row version with a newer id than every earlier one when requests are
 * sent one at a time, and a delete lowers the count). Those are read only when a transaction that
 * wrote has ended anywhere in the cluster since `previous` (its snapshot's xmax moved).
 */
export async function changeMarks(db: Db, previous: Record<string, string> = {}): Promise<Record<string, string>> {
  if (dialectOf(db) === 'sqlite') {
    const own = await sql<{ changes: number }>`select total_changes() as changes`.execute(db);
    const others = await sql<{ data_version: number }>`pragma data_version`.execute(db);
    return { '*': `${own.rows[0]?.changes}/${others.rows[0]?.data_version}` };
  }
  const cluster = await sql<{ xmax: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as xmax`.execute(db);
  const xmax = cluster.rows[0]?.xmax ?? '';
  if (previous[CLUSTER_MARK] === xmax) return previous;
  const marks = (await contentTables(db)).map(
    (table) => sql`select ${table} as name, count(*) || '/' || coalesce(max(xmin::text::bigint), 0) as mark from ${sql.table(table)}`,
  );
  const { rows } = await sql<{ name: string; mark: string }>`${sql.join(marks, sql` union all `)}`.execute(db);
  return { [CLUSTER_MARK]: xmax, ...Object.fromEntries(rows.map((row) => [row.name, row.mark])) };
}

const CLUSTER_MARK = '#cluster';

/** The tables whose contents may differ between two sets of marks (every table, for a whole-database mark). */
export async function tablesMarkedChanged(db: Db, before: Record<string, string>, after: Record<string, string>): Promise<string[]> {
  const moved = Object.keys(after).filter((name) => name !== CLUSTER_MARK && before[name] !== after[name]);
  if (moved.includes('*')) return contentTables(db);
  return moved;
}

/** Names the first difference between two snapshots, or undefined when they are equal. */
export function snapshotDifference(before: Snapshot, after: Snapshot): string | undefined {
  for (const table of new Set([...Object.keys(before.counts), ...Object.keys(after.counts)])) {
    if (before.counts[table] !== after.counts[table]) return `${table}: ${before.counts[table]} rows before, ${after.counts[table]} after`;
    if (before.digests[table] !== after.digests[table]) {
      const was = new Set(before.rows[table] ?? []);
      const changed = (after.rows[table] ?? []).find((row) => !was.has(row));
      return `${table}: contents changed${changed ? ` (now: ${changed.slice(0, 400)})` : ''}`;
    }
  }
  return undefined;
}

/** Every text value of every table, to search for plain secrets. */
export async function textCells(db: Db): Promise<{ table: string; column: string; value: string }[]> {
  const cells: { table: string; column: string; value: string }[] = [];
  for (const table of await tableNames(db)) {
    for (const row of await allRows(db, table)) {
      for (const [column, value] of Object.entries(row)) {
        if (typeof value === 'string') cells.push({ table, column, value });
        else if (Buffer.isBuffer(value)) cells.push({ table, column, value: value.toString('utf8') });
      }
    }
  }
  return cells;
}

/**
 * The API's error form: `{"detail": "<text>", "code": "<error code>"}`, or for 422 `{"detail": [{type, loc, msg, …}]}`,
 * as JSON. Returns a description of what is wrong, or undefined when the answer is fine.
 */
export function errorFormProblem(status: number, contentType: string | null, text: string): string | undefined {
  if (!/^application\/json\b/.test(contentType ?? '')) return `content-type is '${contentType}', not JSON (body: ${text.slice(0, 200)})`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `body is not JSON: ${text.slice(0, 200)}`;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return `body is not an object: ${text.slice(0, 200)}`;
  // `code` is the one extra field: a code from the closed list, which clients reading only `detail` ignore.
  const { detail: _detail, code, ...rest } = body as Record<string, unknown>;
  const keys = Object.keys(body);
  if (!keys.includes('detail') || Object.keys(rest).length > 0) return `body has keys [${keys.join(', ')}], not 'detail' and 'code': ${text.slice(0, 200)}`;
  if (code !== undefined && !(ERROR_CODES as readonly unknown[]).includes(code))
    return `code ${JSON.stringify(code)} is not one of the error codes: ${text.slice(0, 200)}`;
  const detail = (body as { detail: unknown }).detail;
  if (status === 422) {
    if (!Array.isArray(detail) || detail.length === 0) return `422 detail is not a non-empty list: ${text.slice(0, 200)}`;
    for (const issue of detail) {
      const i = issue as Record<string, unknown>;
      if (i === null || typeof i !== 'object') return `422 issue is not an object: ${JSON.stringify(issue)}`;
      if (typeof i.type !== 'string' || typeof i.msg !== 'string') return `422 issue lacks type/msg strings: ${JSON.stringify(issue).slice(0, 200)}`;
      if (!Array.isArray(i.loc) || !i.loc.every((part) => typeof part === 'string' || Number.isInteger(part))) {
        return `422 issue loc is not a list of strings and integers: ${JSON.stringify(issue).slice(0, 200)}`;
      }
    }
    return undefined;
  }
  if (typeof detail !== 'string') return `${status} detail is not a string: ${text.slice(0, 200)}`;
  return undefined;
}

export function assertErrorForm(res: ApiResponse, what: string): void {
  const problem = errorFormProblem(res.status, res.headers.get('content-type'), res.text);
  assert.equal(problem, undefined, `${what}: ${res.status} not in the API's error form: ${problem}`);
}

export interface Operation {
  method: string;
  /** OpenAPI form, e.g. /v2/deployments/{deployment_id}. */
  path: string;
  pathParams: string[];
  query: { name: string; required: boolean; schema: JsonSchema }[];
  body: JsonSchema | undefined;
  /** Empty list: no credentials needed (the health check). */
  security: unknown[] | undefined;
  tags: string[];
}

export type JsonSchema = Record<string, any>;

/** Every operation of the OpenAPI document of a running server. */
export async function operationsOf(baseUrl: string): Promise<Operation[]> {
  const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, any>> };
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const parameters = (op.parameters ?? []) as { in: string; name: string; required?: boolean; schema: JsonSchema }[];
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        // Swagger marks parameters with a default as required; the server fills the default in.
        query: parameters
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, required: Boolean(p.required) && p.schema.default === undefined, schema: p.schema })),
        body: op.requestBody?.content?.['application/json']?.schema,
        security: op.security,
        tags: op.tags ?? [],
      });
    }
  }
  return operations;
}

export interface RawResponse {
  status: number;
  text: string;
  contentType: string | null;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * One HTTP request with the path sent exactly as given (fetch would resolve `..` and
 * `%2e%2e`), a deadline, and event streams cut after their headers.
 */
export function sendRaw(
  baseUrl: string,
  request: { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
  baseTimeoutMs = 15_000,
): Promise<RawResponse> {
  const timeoutMs = deadline(baseTimeoutMs);
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    const req = http.request({ host: hostname, port: Number(port), method: request.method, path: request.path, headers, agent: false }, (res) => {
      const contentType = (res.headers['content-type'] as string | undefined) ?? null;
      if (contentType?.startsWith('text/event-stream')) {
        res.destroy();
        resolve({ status: res.statusCode ?? 0, text: '', contentType, headers: res.headers });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), contentType, headers: res.headers }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (request.body !== undefined) req.write(request.body);
    req.end();
  });
}

/** RELIABILITY_DATABASES=sqlite (or postgres) runs the suites on one database only; both by default. */
export function databasesToTest(): ('sqlite' | 'postgres')[] {
  const wanted = (process.env.RELIABILITY_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  return (['sqlite', 'postgres'] as const).filter((kind) => wanted.includes(kind));
}

/** encodeURIComponent that cannot throw (lone surrogates, which generated strings hold, become U+FFFD first). */
export function encodeURIComponentSafe(value: string): string {
  let wellFormed = '';
  for (const char of value) wellFormed += char.length === 1 && char >= '\ud800' && char <= '\udfff' ? '\ufffd' : char;
  return encodeURIComponent(wellFormed);
}
