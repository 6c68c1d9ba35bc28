import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase } from '../../src/store/database.js';
import { eventually } from '../support/runtimes.js';

/** Frames in the WAL and how many of them are copied back, as SQLite reports them. */
async function walProgress(db: ReturnType<typeof openDatabase>): Promise<{ log: number; checkpointed: number }> {
  const { rows } = await sql<{ log: number; checkpointed: number }>`PRAGMA wal_checkpoint(NOOP)`.execute(db);
  return rows[0] as { log: number; checkpointed: number };
}

test('with background checkpoints, a stream of commits is copied back by the other thread and the WAL starts over', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-checkpoint-'));
  const file = path.join(dir, 'berth.sqlite');
  try {
    const db = openDatabase({ kind: 'sqlite', file }, { checkpointInBackground: true });
    await migrateToLatest(db);
    const at = new Date().toISOString();
    // Some 3,000 WAL frames: past the commit-time threshold of the old setting (4,000 pages
    // counts pages, each commit here writes several), far under the backstop.
    for (let i = 0; i < 1_500; i++) {
      await db
        .insertInto('organizations')
        .values({ id: `org-${i}`, name: `organization ${i} ${'x'.repeat(200)}`, created_at: at })
        .execute();
    }
    const written = await walProgress(db);
    assert.ok(written.log >= 1_000, `the writes left ${written.log} frames`);
    // The worker checks every half second; nothing on this thread checkpoints in between.
    await eventually(async () => {
      const now = await walProgress(db);
      return now.checkpointed === now.log;
    }, 'every frame of the WAL copied back');
    // The next commit after a complete checkpoint starts the WAL over instead of growing it.
    await db.insertInto('organizations').values({ id: 'org-after', name: 'after', created_at: at }).execute();
    assert.ok((await walProgress(db)).log < written.log, 'the WAL grew instead of starting over');
    await db.destroy();

    const reopened = new SQLite(file, { readonly: true });
    assert.equal((reopened.prepare('SELECT count(*) AS n FROM organizations').get() as { n: number }).n, 1_501);
    reopened.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
