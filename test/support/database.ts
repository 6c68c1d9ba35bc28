import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Db, migrateToLatest, openDatabase } from '../../src/store/database.js';
import { createPostgresDatabase, type DatabaseKind } from './server.js';

/** A fresh, migrated database of the given kind without a server, for store and service tests. */
export async function openTestDatabase(kind: DatabaseKind, options: Parameters<typeof openDatabase>[1] = {}): Promise<{ db: Db; close: () => Promise<void> }> {
  if (kind === 'postgres') {
    const postgres = await createPostgresDatabase();
    const db = openDatabase({ kind: 'postgres', url: postgres.url }, options);
    await migrateToLatest(db);
    return {
      db,
      close: async () => {
        await db.destroy();
        await postgres.drop();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-db-'));
  const db = openDatabase({ kind: 'sqlite', file: path.join(dir, 'berth.sqlite') }, options);
  await migrateToLatest(db);
  return {
    db,
    close: async () => {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
