import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { isDatabaseUnavailable, openDatabase } from '../../src/store/database.js';
import { freePort } from '../support/process.js';
import { throughCutProxy } from '../support/cut-proxy.js';
import { skippedWithout } from '../support/database.js';
import { client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { createPostgresDatabase, startTestServer } from '../support/server.js';

const image = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: {},
  source_revision_config: { image_uri: 'docker.io/library/nginx:1.27' },
  secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-never-echoed' }],
});

test('PostgreSQL out of reach: the API answers 503 database_unavailable with Retry-After, keeps running, and serves again once it is back', async (t) => {
  if (await skippedWithout('postgres', t)) return;
  const database = await createPostgresDatabase();
  const { url: throughProxy, proxy } = await throughCutProxy(database.url);
  const bootstrapApiKey = `berth_test_${randomUUID()}`;
  const running: Awaited<ReturnType<typeof startTestServer>>[] = [];
  t.after(async () => {
    proxy.restore();
    for (const server of running) await server.close();
    await proxy.close();
    await database.drop();
  });
  const server = await startTestServer('postgres', { postgresUrl: throughProxy, bootstrapApiKey, encryptionKey: randomBytes(32).toString('hex') });
  running.push(server);
  const api = client(server.url, { key: bootstrapApiKey });
  const created = await api('POST', '/v2/deployments', { body: image('before-the-cut') });
  assert.equal(created.status, 201, created.text);

  // What a PostgreSQL restart or a network partition looks like from Berth: every open
  // connection dropped, every new one refused.
  proxy.cut();
  for (const [method, path, body] of [
    ['GET', `/v2/deployments/${created.body.id}`],
    ['GET', '/v2/deployments'],
    ['POST', '/v2/deployments', image('during-the-cut')],
  ] as const) {
    const answer = await api(method, path, body ? { body } : {});
    assert.equal(answer.status, 503, `${method} ${path}: ${answer.text}`);
    assert.equal(answer.body.code, 'database_unavailable');
    assert.match(answer.body.detail, /database is unavailable/);
    assert.equal(answer.headers.get('retry-after'), '1');
    // Nothing of the database's address, user or the request's secret in the answer.
    assert.doesNotMatch(answer.text, /postgres|127\.0\.0\.1|sk-never-echoed|ECONN|terminated/i);
  }

  proxy.restore();
  const again = await eventually(async () => {
    const answer = await api('GET', '/v2/deployments');
    return answer.status === 200 ? answer : undefined;
  }, 'the API answering again once PostgreSQL is back');
  const names = (again.body.resources as { name: string }[]).map((deployment) => deployment.name);
  assert.deepEqual(names, ['before-the-cut'], 'nothing half-written by the create that failed');
  const after = await api('POST', '/v2/deployments', { body: image('after-the-cut') });
  assert.equal(after.status, 201, after.text);
  assert.ok(
    server.logs.some((line) => line.includes('the database is unavailable')),
    'the failure is in the log, as a warning',
  );
});

test('what counts as the database being unavailable, and what does not', async (t) => {
  // SQLite's lock held past the busy timeout can only be the embedded database's.
  assert.equal(isDatabaseUnavailable(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })), true);
  for (const failure of [
    { code: '23505', message: 'duplicate key value violates unique constraint' },
    { code: '42P01', message: 'relation "x" does not exist' },
    { code: 'SQLITE_CONSTRAINT_UNIQUE', message: 'UNIQUE constraint failed' },
    { message: 'Cannot read properties of undefined' },
    // The same words from any other connection (a code host, a registry, the server that
    // provisions deployments' databases) are not Berth's database being unavailable.
    { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
    { code: '57P01', message: 'terminating connection due to administrator command' },
    { message: 'Connection terminated unexpectedly' },
  ]) {
    assert.equal(isDatabaseUnavailable(Object.assign(new Error(failure.message), failure)), false, failure.message);
  }
  assert.equal(isDatabaseUnavailable(undefined), false);

  // Nothing listens on this port: Berth's own connection refused, and another client's.
  const closed = `postgres://postgres@127.0.0.1:${await freePort()}/berth`;
  const unreachable = openDatabase({ kind: 'postgres', url: closed });
  t.after(() => unreachable.destroy());
  const refused = await sql`select 1`.execute(unreachable).then(
    () => assert.fail('a query through a refused connection succeeded'),
    (error: unknown) => error,
  );
  assert.equal((refused as { code?: string }).code, 'ECONNREFUSED');
  assert.equal(isDatabaseUnavailable(refused), true, "Berth's database refusing connections");
  const other = new pg.Client({ connectionString: closed });
  const otherRefused = await other.connect().then(
    () => assert.fail('connected to a closed port'),
    (error: unknown) => error,
  );
  assert.equal((otherRefused as { code?: string }).code, 'ECONNREFUSED');
  assert.equal(isDatabaseUnavailable(otherRefused), false, 'another PostgreSQL client refused');
});

test("a PostgreSQL backend of Berth's own ended by an administrator counts as the database unavailable", async (t) => {
  if (await skippedWithout('postgres', t)) return;
  const database = await createPostgresDatabase();
  const db = openDatabase({ kind: 'postgres', url: database.url });
  t.after(async () => {
    await db.destroy();
    await database.drop();
  });
  const ended = await sql`select pg_terminate_backend(pg_backend_pid())`.execute(db).then(
    () => assert.fail('the backend survived its own termination'),
    (error: unknown) => error,
  );
  assert.match(String((ended as Error).message), /terminating connection due to administrator command|Connection terminated/);
  assert.equal(isDatabaseUnavailable(ended), true);
});
