import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { isDatabaseUnavailable } from '../../src/store/database.js';
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

test('what counts as the database being unavailable, and what does not', () => {
  for (const failure of [
    { code: '57P01', message: 'terminating connection due to administrator command' },
    { code: '57P03', message: 'the database system is starting up' },
    { code: '08006', message: 'connection failure' },
    { code: '53300', message: 'sorry, too many clients already' },
    { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
    { message: 'Connection terminated unexpectedly' },
    { code: 'SQLITE_BUSY', message: 'database is locked' },
  ]) {
    assert.equal(isDatabaseUnavailable(Object.assign(new Error(failure.message), failure)), true, failure.message);
  }
  for (const failure of [
    { code: '23505', message: 'duplicate key value violates unique constraint' },
    { code: '42P01', message: 'relation "x" does not exist' },
    { code: 'SQLITE_CONSTRAINT_UNIQUE', message: 'UNIQUE constraint failed' },
    { message: 'Cannot read properties of undefined' },
  ]) {
    assert.equal(isDatabaseUnavailable(Object.assign(new Error(failure.message), failure)), false, failure.message);
  }
  assert.equal(isDatabaseUnavailable(undefined), false);
});
