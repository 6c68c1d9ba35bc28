import { type Compilable, CompiledQuery } from 'kysely';
import { type Db, type Executor, prepareOnPostgres } from './database.js';

/**
 * A query of fixed shape whose SQL is compiled once per database instead of on every run:
 * building and compiling the deployment-with-latest-revision join cost Kysely ~40 µs, more
 * than SQLite spent running it (bench/results.md). The builder runs once with placeholder values; where each lands
 * in the compiled parameters is recorded, and later runs bind the real values there
 * (string parameters only, each used as a value as it is).
 * Inside a transaction the query is built as usual (a transaction is a new executor each
 * time, so there is nothing to key a cache on).
 *
 * On PostgreSQL the compiled text also runs as a named prepared statement: parsed and
 * planned once per connection. Such a query must name its columns (never `*`): PostgreSQL
 * re-plans a prepared statement by itself after any DDL on the tables it reads, but a
 * `*` whose columns changed (a migration adding one) would fail with "cached plan must not
 * change result type" on every connection that prepared it before. With named columns, a
 * migration that adds columns or indexes only makes the next run re-plan; one that drops
 * or renames a column the query names breaks it, as it would break the unprepared query.
 */
export function preparedQuery<Params extends string[], Row>(
  build: (db: Executor, ...params: Params) => Compilable<Row>,
): (db: Executor, ...params: Params) => Promise<Row[]> {
  const compiledFor = new WeakMap<Db, { sql: string; bindings: Binding[] }>();
  return async (db, ...params) => {
    if (db.isTransaction) return (await db.executeQuery<Row>(build(db, ...params))).rows;
    let compiled = compiledFor.get(db);
    if (!compiled) {
      compiled = compileWithPlaceholders(db, build, params.length);
      compiledFor.set(db, compiled);
      prepareOnPostgres(compiled.sql);
    }
    const bound = compiled.bindings.map((binding) => ('parameter' in binding ? params[binding.parameter] : binding.constant));
    return (await db.executeQuery(CompiledQuery.raw(compiled.sql, bound))).rows as Row[];
  };
}

const PLACEHOLDER = '\u0000berth-parameter-';

type Binding = { parameter: number } | { constant: unknown };

function compileWithPlaceholders<Params extends string[]>(
  db: Executor,
  build: (db: Executor, ...params: Params) => Compilable<unknown>,
  count: number,
): { sql: string; bindings: Binding[] } {
  const placeholders = Array.from({ length: count }, (_, index) => `${PLACEHOLDER}${index}\u0000`) as Params;
  const { sql, parameters } = build(db, ...placeholders).compile();
  const bindings = parameters.map((value): Binding => {
    const parameter = placeholders.indexOf(value as string);
    if (parameter >= 0) return { parameter };
    // A value computed from a parameter (a LIKE pattern, say) cannot be bound later.
    if (typeof value === 'string' && value.includes(PLACEHOLDER)) throw new Error(`preparedQuery: a parameter is transformed before binding: ${sql}`);
    return { constant: value };
  });
  const unused = placeholders.findIndex((_, index) => !bindings.some((binding) => 'parameter' in binding && binding.parameter === index));
  if (unused >= 0) throw new Error(`preparedQuery: parameter ${unused} is not bound in: ${sql}`);
  return { sql, bindings };
}
