import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { backupDatabase } from '../../src/operations/backup.js';
import { OperationError } from '../../src/operations/errors.js';
import { runCommand } from '../support/commands.js';
import { client } from '../support/http.js';
import { spawnBerth, stopBerth } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { deadline } from '../support/deadline.js';
import { nodeArguments } from '../support/entry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

const backupCli = (env: Record<string, string>, file: string) =>
  runCommand(process.execPath, [...nodeArguments('src/main.ts'), 'backup', file], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    check: false,
    signal: AbortSignal.timeout(deadline(120_000)),
  });

/** What a torn copy would break: SQLite's own checks, and every deployment with the revision it names. */
function assertConsistent(file: string): Set<string> {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    assert.deepEqual(db.pragma('foreign_key_check'), []);
    const orphans = db.prepare('select d.id from deployments d left join revisions r on r.id = d.latest_revision_id where r.id is null').all() as {
      id: string;
    }[];
    assert.deepEqual(orphans, [], 'deployments whose latest revision is missing');
    const journal = db.pragma('journal_mode', { simple: true });
    assert.equal(journal, 'delete', 'the backup needs its -wal file');
    return new Set((db.prepare('select id from deployments').all() as { id: string }[]).map((row) => row.id));
  } finally {
    db.close();
  }
}

test('berth backup copies a consistent database while the server writes to it, and a server starts on the copy', async (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-backup-'));
  t.after(() => fs.rmSync(work, { recursive: true, force: true }));
  const dataDir = path.join(work, 'data');
  const key = `berth_backup_test_${randomBytes(16).toString('hex')}`;
  const env = { BERTH_DATA_DIR: dataDir, BERTH_BOOTSTRAP_API_KEY: key, BERTH_CONTAINER_RUNTIME: 'none', BERTH_RATE_LIMIT_PER_MINUTE: '0' };
  const berth = await spawnBerth(env);
  const acknowledged: string[] = [];
  let writing = true;
  let writers: Promise<void>[] = [];
  try {
    const api = client(berth.url, { key });
    // Creates with secrets, while the engine moves each new revision on: several transactions a moment.
    const writer = async (n: number) => {
      for (let i = 0; writing; i += 1) {
        const created = await api('POST', '/v2/deployments', {
          body: {
            name: `backup-${n}-${i}`,
            source: 'external_docker',
            source_config: {},
            source_revision_config: { image_uri: 'localhost/agent:v1' },
            secrets: [{ name: 'TOKEN', value: randomBytes(8).toString('hex') }],
          },
        });
        assert.equal(created.status, 201, created.text);
        acknowledged.push(created.body.id);
      }
    };
    writers = [1, 2, 3].map(writer);
    // A writer that fails ends the wait with its error instead of leaving it to spin.
    const failed = Promise.all(writers);
    await eventually(async () => (await Promise.race([failed, 'pending'])) === 'pending' && acknowledged.length >= 30, '30 acknowledged creates');

    const backups: { file: string; before: string[] }[] = [];
    for (let round = 0; round < 3; round += 1) {
      const before = [...acknowledged];
      const file = path.join(work, `backup-${round}.sqlite`);
      const result = await backupCli(env, file);
      assert.equal(result.code, 0, result.output);
      assert.match(result.output, /Backed up .* \(\d+ bytes\)/);
      backups.push({ file, before });
    }
    writing = false;
    await Promise.all(writers);

    for (const { file, before } of backups) {
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const ids = assertConsistent(file);
      // Everything acknowledged before the backup began is in it.
      for (const id of before) assert.ok(ids.has(id), `deployment ${id}, acknowledged before the backup, is missing from ${path.basename(file)}`);
      assert.ok(ids.size <= acknowledged.length);
    }
    assert.deepEqual(
      fs.readdirSync(work).filter((name) => name.includes('partial')),
      [],
      'a partial copy was left behind',
    );
  } finally {
    writing = false;
    await Promise.allSettled(writers);
    await stopBerth(berth);
  }

  // Restore: the copy and the key file in a new data directory.
  const restored = path.join(work, 'restored');
  fs.mkdirSync(restored);
  fs.copyFileSync(path.join(work, 'backup-2.sqlite'), path.join(restored, 'berth.sqlite'));
  fs.copyFileSync(path.join(dataDir, 'encryption.key'), path.join(restored, 'encryption.key'));
  const again = await spawnBerth({ ...env, BERTH_DATA_DIR: restored });
  try {
    const api = client(again.url, { key });
    const listed = await api('GET', '/v2/deployments?limit=1');
    assert.equal(listed.status, 200, listed.text);
    const first = await api('GET', `/v2/deployments/${acknowledged[0]}`);
    assert.equal(first.status, 200, first.text);
  } finally {
    await stopBerth(again);
  }
});

test('berth backup refuses PostgreSQL with the pg_dump command to use, and an existing file without --force', async () => {
  await assert.rejects(backupDatabase({ kind: 'postgres', url: 'postgres://berth:pw@db.example/berth' }, '/tmp/never-written.sqlite'), (error: unknown) => {
    assert.ok(error instanceof OperationError);
    assert.match(error.message, /pg_dump --format=custom --file=berth\.dump "\$DATABASE_URL"/);
    assert.ok(!error.message.includes(':pw@'), 'the database URL was shown');
    return true;
  });

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-backup-'));
  try {
    const source = path.join(work, 'berth.sqlite');
    const db = new SQLite(source);
    db.exec('create table t (x); insert into t values (1)');
    db.close();
    const target = path.join(work, 'copy.sqlite');
    fs.writeFileSync(target, 'keep me');
    await assert.rejects(backupDatabase({ kind: 'sqlite', file: source }, target), /exists already; choose another file or pass --force/);
    assert.equal(fs.readFileSync(target, 'utf8'), 'keep me');
    await backupDatabase({ kind: 'sqlite', file: source }, target, { overwrite: true });
    const copy = new SQLite(target, { readonly: true });
    assert.deepEqual(copy.prepare('select x from t').all(), [{ x: 1 }]);
    copy.close();
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
});
