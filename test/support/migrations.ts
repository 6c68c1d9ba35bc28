import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migrator } from 'kysely';
import { type Db, openDatabase } from '../../src/store/database.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { createPostgresDatabase, type DatabaseKind } from './server.js';

/** A database migrated up to (and including) `last`, as an earlier version of Berth left it. */
export async function databaseAt(kind: DatabaseKind, last: string): Promise<{ db: Db; close: () => Promise<void> }> {
  let db: Db;
  let drop: () => Promise<void>;
  if (kind === 'postgres') {
    const postgres = await createPostgresDatabase();
    db = openDatabase({ kind: 'postgres', url: postgres.url });
    drop = postgres.drop;
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-migration-'));
    db = openDatabase({ kind: 'sqlite', file: path.join(dir, 'berth.sqlite') });
    drop = async () => fs.rmSync(dir, { recursive: true, force: true });
  }
  const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo(last);
  if (error) throw error;
  return {
    db,
    close: async () => {
      await db.destroy();
      await drop();
    },
  };
}
