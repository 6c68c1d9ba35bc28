import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.js';

test('SQLite rows read as arrays come out as the objects better-sqlite3 builds: same keys, order and values', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-fast-rows-'));
  const file = path.join(dir, 'db.sqlite');
  const plain = new SQLite(file);
  plain.exec(`CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB, e TEXT);
    INSERT INTO t VALUES (1, 'x', 1.5, x'0102', NULL), (2, '{"k":[1,2]}', -3, NULL, 'é');`);
  const db = openDatabase({ kind: 'sqlite', file });
  try {
    for (const text of [
      'SELECT a, b, c, d, e FROM t ORDER BY a',
      // A duplicate name keeps the last value; aliases name the keys.
      'SELECT a, b AS a, e AS "__x", c + 1 AS "weird ""name" FROM t ORDER BY a',
      'SELECT * FROM t ORDER BY a',
      'SELECT a FROM t WHERE a > 5',
      // Left to better-sqlite3: in an object literal `__proto__` would set the prototype.
      'SELECT a AS "__proto__", b FROM t ORDER BY a',
    ]) {
      const expected = plain.prepare(text).all();
      // Twice: the second run reuses the cached statement.
      for (let run = 0; run < 2; run++) {
        const { rows } = await sql.raw(text).execute(db);
        assert.deepEqual(rows, expected, text);
        assert.deepEqual(
          rows.map((row) => Object.keys(row as object)),
          expected.map((row) => Object.keys(row as object)),
          text,
        );
      }
    }
  } finally {
    await db.destroy();
    plain.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
