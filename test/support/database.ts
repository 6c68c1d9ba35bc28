import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { type Db, openDatabase } from '../../src/store/database.js';
import { copyMigratedSqlite, createPostgresDatabase, type DatabaseKind, postgresUnavailable } from './server.js';

/** Every database Berth runs on; store-facing tests run on each. */
export const DATABASE_KINDS: readonly DatabaseKind[] = ['sqlite', 'postgres'];

/** Why tests on this database (and what else they need) cannot run here, or null. */
async function unavailable(kind: DatabaseKind, needs?: () => string | null | Promise<string | null>): Promise<string | null> {
  return (kind === 'postgres' ? await postgresUnavailable() : null) ?? (needs ? await needs() : null);
}

function sayWhy(name: string, reason: string): void {
  process.stdout.write(`# SKIP ${name}: ${reason}\n`);
}

export interface EachDatabaseOptions {
  /** The databases to run on (default both). */
  kinds?: readonly DatabaseKind[];
  /** Another service the suites need (Redis, say): why it is missing, or null. */
  needs?: () => string | null | Promise<string | null>;
  /** The suite's timeout, from `deadline()`. */
  timeout?: number;
}

/**
 * The same suite once per database, named `<name> [<kind>]`. A suite skips, saying why on
 * the output and in node's report, only when its database's server (or what `needs` names)
 * is not there at all; `body` is not called then.
 */
export function describeEachDatabase(name: string, body: (kind: DatabaseKind) => void | Promise<void>, options: EachDatabaseOptions = {}): void {
  for (const kind of options.kinds ?? DATABASE_KINDS) {
    const title = `${name} [${kind}]`.trim();
    describe(title, options.timeout === undefined ? {} : { timeout: options.timeout }, async () => {
      const skip = await unavailable(kind, options.needs);
      if (skip) {
        sayWhy(title, skip);
        test('skipped', { skip }, () => {});
        return;
      }
      await body(kind);
    });
  }
}

/**
 * For a single test on one database: skips it, saying why, when that database's server (or
 * what `needs` names) is not there, and answers true; the test then returns.
 */
export async function skippedWithout(kind: DatabaseKind, t: TestContext, needs?: () => string | null | Promise<string | null>): Promise<boolean> {
  const skip = await unavailable(kind, needs);
  if (!skip) return false;
  sayWhy(`${t.name}`, skip);
  t.skip(skip);
  return true;
}

/** A fresh, migrated database of the given kind without a server, for store and service tests. */
export async function openTestDatabase(kind: DatabaseKind, options: Parameters<typeof openDatabase>[1] = {}): Promise<{ db: Db; close: () => Promise<void> }> {
  if (kind === 'postgres') {
    const postgres = await createPostgresDatabase(undefined, undefined, { migrated: true });
    const db = openDatabase({ kind: 'postgres', url: postgres.url }, options);
    return {
      db,
      close: async () => {
        await db.destroy();
        await postgres.drop();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-db-'));
  await copyMigratedSqlite(path.join(dir, 'berth.sqlite'));
  const db = openDatabase({ kind: 'sqlite', file: path.join(dir, 'berth.sqlite') }, options);
  return {
    db,
    close: async () => {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
