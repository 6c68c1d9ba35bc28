import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { startCheckpointer } from '../../src/store/checkpointer.js';
import { migrateToLatest, openDatabase } from '../../src/store/database.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';

/** Frames in the WAL and how many of them are copied back, as SQLite reports them. */
async function walProgress(db: ReturnType<typeof openDatabase>): Promise<{ log: number; checkpointed: number }> {
  const { rows } = await sql<{ log: number; checkpointed: number }>`PRAGMA wal_checkpoint(NOOP)`.execute(db);
  return rows[0] as { log: number; checkpointed: number };
}

test('with background checkpoints, what commits write is copied into the database file by the other thread', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-checkpoint-'));
  const file = path.join(dir, 'berth.sqlite');
  const errors: Error[] = [];
  // Destroyed in `finally` too: a live database (and its checkpoint thread) kept the file
  // running for minutes after a failed assertion.
  const db = openDatabase({ kind: 'sqlite', file }, { checkpointInBackground: { onError: (error) => errors.push(error) } });
  let destroyed = false;
  try {
    await migrateToLatest(db);
    const before = fs.statSync(file).size;
    const at = new Date().toISOString();
    // ~600 KB of rows in some 3,000 WAL frames: under the commit-time backstop (10,000), so
    // only the checkpoint thread can bring them into the database file.
    for (let i = 0; i < 1_500; i++) {
      await db
        .insertInto('organizations')
        .values({ id: `org-${i}`, name: `organization ${i} ${'x'.repeat(400)}`, created_at: at })
        .execute();
    }
    // The thread copies once 250 frames wait (src/store/checkpointer.ts), so fewer may stay in
    // the WAL: once a copy has caught up, the next commits start the WAL over, and on a busy
    // machine the last few hundred frames of the loop can land there (waiting for all of them
    // to be copied timed out).
    await eventually(async () => {
      const { log, checkpointed } = await walProgress(db);
      return log - checkpointed < 1_000 && fs.statSync(file).size > before + 500_000;
    }, 'the rows copied from the WAL into the database file');
    await db.destroy();
    destroyed = true;
    assert.deepEqual(errors, [], 'no checkpoint failed');

    const reopened = new SQLite(file, { readonly: true });
    assert.equal((reopened.prepare('SELECT count(*) AS n FROM organizations').get() as { n: number }).n, 1_500);
    reopened.close();
  } finally {
    if (!destroyed) await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('under a steady stream of commits the WAL keeps starting over and stays bounded', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-checkpoint-'));
  const errors: Error[] = [];
  const db = openDatabase({ kind: 'sqlite', file: path.join(dir, 'berth.sqlite') }, { checkpointInBackground: { onError: (error) => errors.push(error) } });
  let destroyed = false;
  try {
    await migrateToLatest(db);
    const at = new Date().toISOString();
    let restarts = 0;
    let previous = 0;
    let largest = 0;
    // Commits one after the other, never pausing long enough for a checkpoint to catch up by
    // chance, until the WAL has started over twice: the backstop at 10,000 frames must start
    // it over (before it, the WAL grew to 40,000 frames and more; it can overshoot while the
    // thread holds the checkpoint, hence the margin). The deadline only bounds a failure.
    for (let i = 0, until = Date.now() + deadline(60_000); restarts < 2 && Date.now() < until; i++) {
      await db
        .insertInto('organizations')
        .values({ id: `org-${i}`, name: `organization ${i} ${'x'.repeat(500)}`, created_at: at })
        .execute();
      if (i % 50 === 0) {
        const { log } = await walProgress(db);
        if (log < previous) restarts += 1;
        previous = log;
        largest = Math.max(largest, log);
      }
    }
    await db.destroy();
    destroyed = true;
    assert.ok(restarts >= 2, `the WAL started over ${restarts} times (largest ${largest} frames)`);
    assert.ok(largest < 30_000, `the WAL reached ${largest} frames`);
    assert.deepEqual(errors, [], 'no checkpoint failed');
  } finally {
    if (!destroyed) await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a checkpoint thread that cannot work says so instead of dying in silence', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-checkpoint-'));
  const sqlite = new SQLite(path.join(dir, 'berth.sqlite'));
  try {
    const errors: Error[] = [];
    // The thread opens its own connection, here to a file in a directory that is not there.
    startCheckpointer(sqlite, path.join(dir, 'missing', 'berth.sqlite'), (error) => errors.push(error));
    await eventually(async () => errors.length > 0, 'the thread reported its failure');
    assert.match(errors[0]?.message ?? '', /directory does not exist|unable to open/i);
  } finally {
    sqlite.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
