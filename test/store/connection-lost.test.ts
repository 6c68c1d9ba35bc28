import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openTestDatabase, skippedWithout } from '../support/database.js';
import { eventually } from '../support/runtimes.js';
import { POSTGRES_ADMIN_URL } from '../support/server.js';

test('a PostgreSQL connection ended while a transaction holds it: the transaction fails, the process goes on, and the next statement gets a new connection', async (t) => {
  if (await skippedWithout('postgres', t)) return;
  const lost: (Error & { code?: string })[] = [];
  const { db, close } = await openTestDatabase('postgres', { onConnectionLost: (error) => lost.push(error) });
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  t.after(async () => {
    await admin.end().catch(() => {});
    await close();
  });
  await admin.connect();

  const transaction = db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
    // What a PostgreSQL restart or failover does to every connection: here to this one,
    // lent to the transaction and between its statements. Before the fix the pool's client
    // had no listener then, and its 'error' ended the process.
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    await eventually(async () => lost.length > 0, 'the connection’s loss to be heard');
    await sql`SELECT 1`.execute(trx);
  });
  await assert.rejects(transaction);
  assert.equal(lost[0]?.code, '57P01', 'the loss is reported with PostgreSQL’s reason');
  const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db);
  assert.deepEqual(rows, [{ one: 1 }]);
});
