import { type SqlBool, sql } from 'kysely';
import { type Executor, isSqlite } from './database.js';

/**
 * `column IN (…)` over a JSON list of texts bound as one parameter: the statement is the
 * same whatever the number of values, so it is compiled once (prepared.ts) and, on
 * PostgreSQL, planned once, where a list written out as `IN ($1, $2, …)` is a statement
 * of its own for each length, parsed and planned on every run.
 */
export function inJsonList(db: Executor, column: string, list: string) {
  return isSqlite(db)
    ? sql<SqlBool>`${sql.ref(column)} IN (SELECT value FROM json_each(${list}))`
    : sql<SqlBool>`${sql.ref(column)} = ANY (ARRAY(SELECT json_array_elements_text(CAST(${list} AS json))))`;
}
