import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createClient } from 'redis';
import { type Client, client } from '../support/http.js';
import { eventually, GatedRuntime } from '../support/runtimes.js';
import { freePort } from '../support/process.js';
import { POSTGRES_ADMIN_URL, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';

const REDIS_ADMIN_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function redisUnavailable(): Promise<string | null> {
  const probe = createClient({ url: REDIS_ADMIN_URL, socket: { connectTimeout: 2000, reconnectStrategy: false } });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
    return null;
  } catch (error) {
    return `Redis at ${REDIS_ADMIN_URL} is not reachable (${(error as Error).message})`;
  } finally {
    await probe.quit().catch(() => {});
  }
}

async function postgresScalar(sql: string, values: unknown[]): Promise<number> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    return Number((await admin.query(sql, values)).rows[0]?.n ?? 0);
  } finally {
    await admin.end();
  }
}

/**
 * Issue 10: with BERTH_DEPLOYMENT_POSTGRES_URL and BERTH_DEPLOYMENT_REDIS_URL, each
 * deployment gets a database and role, and a Redis database and user, before its first
 * revision runs (AWAITING_DATABASE → READY); the container gets POSTGRES_URI and
 * REDIS_URI; a delete drops them; *_URI_CUSTOM secrets skip them.
 */
describe('databases per deployment (real PostgreSQL and Redis)', async () => {
  const skip = (await postgresUnavailable()) ?? (await redisUnavailable());
  if (skip) {
    process.stdout.write(`# SKIP databases per deployment: ${skip}\n`);
    return;
  }
  let server: TestServer;
  let api: Client;
  let runtime: GatedRuntime;

  before(async () => {
    runtime = new GatedRuntime();
    runtime.open();
    server = await startTestServer('sqlite', {
      overrides: { runtime },
      provisioning: { postgresUrl: POSTGRES_ADMIN_URL, redisUrl: REDIS_ADMIN_URL },
    });
    api = client(server.url, { key: server.adminKey });
  });
  after(async () => server.close());

  const create = async (name: string, secrets: { name: string; value: string }[] = []) => {
    const res = await api('POST', '/v2/deployments', {
      body: { name, source: 'external_docker', source_config: {}, source_revision_config: { image_uri: 'registry.local/agent:v1' }, secrets },
    });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; latest_revision_id: string; status: string };
  };
  const finished = async (id: string, revision: string) =>
    (await api('GET', `/v2/deployments/${id}/revisions/${revision}?wait_for_terminal=60`)).body as { status: string; status_message: string | null };

  test('a deployment gets its own database and Redis, usable with the URIs its container gets, and loses them on delete', async () => {
    const created = await create('with-databases');
    assert.equal(created.status, 'AWAITING_DATABASE');
    assert.equal((await finished(created.id, created.latest_revision_id)).status, 'DEPLOYED');
    assert.equal((await api('GET', `/v2/deployments/${created.id}`)).body.status, 'READY');

    const env = runtime.started.find((r) => r.deploymentId === created.id)?.env ?? {};
    assert.match(env.POSTGRES_URI ?? '', /^postgres(ql)?:\/\//);
    assert.match(env.REDIS_URI ?? '', /^redis:\/\//);
    assert.ok(!server.logs.join('').includes(new URL(env.POSTGRES_URI as string).password), 'the password never reaches the log');

    const db = new pg.Client({ connectionString: env.POSTGRES_URI });
    await db.connect();
    await db.query('create table notes (body text)');
    await db.query("insert into notes values ('kept')");
    assert.equal((await db.query('select body from notes')).rows[0].body, 'kept');
    const names = (await db.query('select current_database() as d, current_user as u')).rows[0] as { d: string; u: string };
    await db.end();

    const cache = createClient({ url: env.REDIS_URI, socket: { reconnectStrategy: false } });
    await cache.connect();
    await cache.set('greeting', 'hello');
    assert.equal(await cache.get('greeting'), 'hello');
    await cache.quit();

    assert.equal((await api('DELETE', `/v2/deployments/${created.id}`)).status, 204);
    await eventually(async () => (await api('GET', `/v2/deployments/${created.id}`)).status === 404, 'the deployment to be gone', 30_000);
    assert.equal(await postgresScalar('select count(*) as n from pg_database where datname = $1', [names.d]), 0, 'the database is dropped');
    assert.equal(await postgresScalar('select count(*) as n from pg_roles where rolname = $1', [names.u]), 0, 'the role is dropped');
    const admin = createClient({ url: REDIS_ADMIN_URL, socket: { reconnectStrategy: false } });
    await admin.connect();
    const users = await admin.sendCommand(['ACL', 'USERS']);
    await admin.quit();
    assert.ok(!(users as unknown as string[]).some((u) => u.includes(created.id.replace(/-/g, '').slice(0, 12))), 'the Redis user is removed');
  });

  test('POSTGRES_URI_CUSTOM and REDIS_URI_CUSTOM mean no provisioning', async () => {
    const created = await create('brings-its-own', [
      { name: 'POSTGRES_URI_CUSTOM', value: 'postgres://elsewhere.example/db' },
      { name: 'REDIS_URI_CUSTOM', value: 'redis://elsewhere.example' },
    ]);
    assert.equal((await finished(created.id, created.latest_revision_id)).status, 'DEPLOYED');
    const env = runtime.started.find((r) => r.deploymentId === created.id)?.env ?? {};
    assert.equal(env.POSTGRES_URI, undefined);
    assert.equal(env.REDIS_URI, undefined);
    assert.equal(env.POSTGRES_URI_CUSTOM, 'postgres://elsewhere.example/db');
    assert.equal((await api('GET', `/v2/deployments/${created.id}`)).body.status, 'READY');
    assert.equal((await api('DELETE', `/v2/deployments/${created.id}`)).status, 204);
  });

  test('a database server that does not answer ends the revision CREATE_FAILED, naming it', async () => {
    const closed = await freePort();
    const failing = await startTestServer('sqlite', {
      overrides: { runtime },
      provisioning: { postgresUrl: `postgres://postgres:sesame-${closed}@127.0.0.1:${closed}/postgres` },
    });
    try {
      const other = client(failing.url, { key: failing.adminKey });
      const created = await other('POST', '/v2/deployments', {
        body: {
          name: 'no-database',
          source: 'external_docker',
          source_config: {},
          source_revision_config: { image_uri: 'registry.local/agent:v1' },
          secrets: [],
        },
      });
      const revision = (await other('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=120`)).body;
      assert.equal(revision.status, 'CREATE_FAILED', JSON.stringify(revision));
      assert.match(revision.status_message, new RegExp(`127\\.0\\.0\\.1:${closed}`));
      assert.ok(!JSON.stringify(revision).includes(`sesame-${closed}`), 'the password is not in the message');
      // Never READY without its database; with nothing serving and nothing in flight it is UNUSED.
      await eventually(async () => (await other('GET', `/v2/deployments/${created.body.id}`)).body.status === 'UNUSED', 'the deployment to settle');
    } finally {
      await failing.close();
    }
  });
});
