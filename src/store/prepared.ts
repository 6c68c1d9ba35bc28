import { type Compilable, CompiledQuery, type DialectAdapter } from 'kysely';
import { type Executor, prepareOnPostgres } from './database.js';

/**
 * A query whose SQL is compiled once per shape instead of on every run: building and
 * compiling a statement costs Kysely 20–60 µs, often more than SQLite spends running it
 * (bench/results.md). The builder runs once with placeholder values; where each lands in the
 * compiled parameters is recorded, and later runs bind the real values there. Every value
 * must be used as it is (never transformed, compared or branched on by the builder): a
 * builder that must branch is one prepared query per branch.
 *
 * A parameter is a value, a list of values (an `IN`), a record of values (the columns an
 * UPDATE sets, a row to insert, conditions keyed by column) or a list of such records (rows
 * of one INSERT). Lists and records give a query its shape: how many items, which keys are
 * set (an `undefined` value is left out, as Kysely does); the builder may follow the shape
 * (loop over a record's keys) but never the values. Each shape is compiled once. The
 * compiled text depends only on the dialect, so it is kept per dialect adapter, which a
 * transaction shares with its database: statements inside transactions skip Kysely's
 * building and compiling too.
 *
 * On PostgreSQL the compiled text also runs as a named prepared statement: parsed and
 * planned once per connection. Such a query must name its columns (never `*`): PostgreSQL
 * re-plans a prepared statement by itself after any DDL on the tables it reads, but a
 * `*` whose columns changed (a migration adding one) would fail with "cached plan must not
 * change result type" on every connection that prepared it before. With named columns, a
 * migration that adds columns or indexes only makes the next run re-plan; one that drops
 * or renames a column the query names breaks it, as it would break the unprepared query.
 */
export function preparedQuery<Params extends Parameter[], Row>(
  build: (db: Executor, ...params: Params) => Compilable<Row>,
): (db: Executor, ...params: Params) => Promise<Row[]> {
  const compiledFor = new WeakMap<DialectAdapter, Map<string, Compiled>>();
  return async (db, ...params) => {
    const adapter = db.getExecutor().adapter;
    let shapes = compiledFor.get(adapter);
    if (!shapes) compiledFor.set(adapter, (shapes = new Map()));
    const leaves: Value[] = [];
    const shape = flatten(params, leaves);
    // A long list (secrets by the hundred) would make a statement of its own, kept forever.
    if (leaves.length > MAX_PREPARED_VALUES) return (await db.executeQuery(build(db, ...params))).rows;
    let compiled = shapes.get(shape);
    if (!compiled) {
      compiled = compileWithPlaceholders(db, build, params);
      shapes.set(shape, compiled);
      prepareOnPostgres(compiled.sql);
    }
    const bound = compiled.bindings.map((binding) => (typeof binding === 'number' ? leaves[binding] : binding.constant));
    return (await db.executeQuery(CompiledQuery.raw(compiled.sql, bound))).rows as Row[];
  };
}

type Value = string | number | null;
type Values = { readonly [column: string]: Value | undefined };
type Parameter = Value | readonly Value[] | Values | readonly Values[];

/** A leaf's index among the flattened values, or a constant the builder wrote itself. */
type Binding = number | { constant: unknown };
interface Compiled {
  sql: string;
  bindings: Binding[];
}

const PLACEHOLDER = '\u0000berth-parameter-';

/** Beyond this many values a query is built each time instead (see above). */
const MAX_PREPARED_VALUES = 200;

/**
 * Appends the parameters' values to `leaves` in a fixed order (parameter, row, key) and
 * answers the shape that order depends on.
 */
function flatten(params: readonly Parameter[], leaves: Value[]): string {
  let shape = '';
  for (const param of params) {
    if (param === null || typeof param !== 'object') {
      leaves.push(param);
      shape += '|';
    } else if (Array.isArray(param)) {
      shape += `|${param.length}[`;
      for (const item of param as readonly (Value | Values)[]) {
        if (item === null || typeof item !== 'object') leaves.push(item);
        else shape += `${flattenRecord(item, leaves)};`;
      }
    } else {
      shape += `|{${flattenRecord(param as Values, leaves)}`;
    }
  }
  return shape;
}

function flattenRecord(record: Values, leaves: Value[]): string {
  let keys = '';
  for (const key in record) {
    const value = record[key];
    if (value === undefined) continue;
    leaves.push(value);
    keys += `${key},`;
  }
  return keys;
}

/** The parameters again, each value replaced by a placeholder naming its leaf index. */
function placeholdersFor(params: readonly Parameter[]): Parameter[] {
  let next = 0;
  const placeholder = (): string => `${PLACEHOLDER}${next++}\u0000`;
  const record = (values: Values): Values => {
    const out: Record<string, Value> = {};
    for (const key in values) if (values[key] !== undefined) out[key] = placeholder();
    return out;
  };
  return params.map((param): Parameter => {
    if (param === null || typeof param !== 'object') return placeholder();
    if (Array.isArray(param))
      return (param as readonly (Value | Values)[]).map((item) => (item === null || typeof item !== 'object' ? placeholder() : record(item))) as Parameter;
    return record(param as Values);
  });
}

function compileWithPlaceholders<Params extends Parameter[]>(
  db: Executor,
  build: (db: Executor, ...params: Params) => Compilable<unknown>,
  params: Params,
): Compiled {
  const placeholders = placeholdersFor(params);
  const leafCount = countLeaves(placeholders);
  const { sql, parameters } = build(db, ...(placeholders as Params)).compile();
  const bindings = parameters.map((value): Binding => {
    if (typeof value === 'string' && value.startsWith(PLACEHOLDER) && value.endsWith('\u0000')) {
      const leaf = Number(value.slice(PLACEHOLDER.length, -1));
      if (Number.isInteger(leaf)) return leaf;
    }
    // A value computed from a parameter (a LIKE pattern, say) cannot be bound later.
    if (typeof value === 'string' && value.includes(PLACEHOLDER)) throw new Error(`preparedQuery: a parameter is transformed before binding: ${sql}`);
    return { constant: value };
  });
  for (let leaf = 0; leaf < leafCount; leaf++) {
    if (!bindings.includes(leaf)) throw new Error(`preparedQuery: value ${leaf} of the parameters is not bound in: ${sql}`);
  }
  return { sql, bindings };
}

function countLeaves(params: readonly Parameter[]): number {
  const leaves: Value[] = [];
  flatten(params, leaves);
  return leaves.length;
}
