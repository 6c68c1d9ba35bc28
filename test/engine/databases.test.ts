import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { legacyPostgresNames } from '../../src/provisioning/postgres.js';
import { Encryptor, loadEncryptionKey } from '../../src/security/encryption.js';
import { resourceUriContext } from '../../src/security/resource-uris.js';
import { type Client, client } from '../support/http.js';
import { freePort } from '../support/process.js';
import { connectRedis, redisServerMissing, startRedis, type TestRedis } from '../support/redis.js';
import { eventually, GatedRuntime } from '../support/runtimes.js';
import { POSTGRES_ADMIN_URL, postgresUnavailable, startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

async function postgresRows<T>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => {});
  await db.connect();
  try {
    return (await db.query(sql, values)).rows as T[];
  } finally {
    await db.end();
  }
}

const PER_WORKSPACE = 2;

/**
 * Issues 10 and 20: with BERTH_DEPLOYMENT_POSTGRES_URL and BERTH_DEPLOYMENT_REDIS_URL,
 * each deployment gets a database and role of random names, and a Redis user limited to a
 * random key prefix, before its first revision runs (AWAITING_DATABASE → READY); the
 * container gets POSTGRES_URI, REDIS_URI and REDIS_KEY_PREFIX; a delete drops them;
 * *_URI_CUSTOM secrets skip them; each workspace has at most
 * BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE of each, whatever other workspaces hold.
 */
describeEachDatabase(
  'databases per deployment (real PostgreSQL and Redis)',
  (kind) => {
    let redis: TestRedis;
    let server: TestServer;
    let api: Client;
    let runtime: GatedRuntime;

    before(async () => {
      redis = await startRedis();
      runtime = new GatedRuntime();
      runtime.open();
      server = await startTestServer(kind, {
        overrides: { runtime },
        provisioning: { postgresUrl: POSTGRES_ADMIN_URL, redisUrl: redis.adminUrl, perWorkspace: PER_WORKSPACE },
      });
      api = client(server.url, { key: server.adminKey });
    });
    after(async () => {
      await server?.close();
      await redis?.stop();
      // What a failed test left behind on the shared PostgreSQL server (the Redis was its own).
      for (const started of runtime?.started ?? []) {
        const uri = started.env.POSTGRES_URI;
        if (!uri) continue;
        const name = pg.escapeIdentifier(new URL(uri).pathname.slice(1));
        await postgresRows(POSTGRES_ADMIN_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await postgresRows(POSTGRES_ADMIN_URL, `DROP ROLE IF EXISTS ${name}`);
      }
    });

    /** A new workspace and a member key bound to it: another tenant of the same Berth. */
    const newMember = async (): Promise<Client> => {
      const workspace = await api('POST', '/v1/workspaces', { body: { name: `ws-${Date.now()}-${Math.random()}` } });
      assert.equal(workspace.status, 201, workspace.text);
      const key = await api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: workspace.body.id } });
      assert.equal(key.status, 201, key.text);
      return client(server.url, { key: key.body.key });
    };
    const create = async (as: Client, name: string, secrets: { name: string; value: string }[] = []) => {
      const res = await as('POST', '/v2/deployments', {
        body: { name, source: 'external_docker', source_config: {}, source_revision_config: { image_uri: 'registry.local/agent:v1' }, secrets },
      });
      assert.equal(res.status, 201, res.text);
      return res.body as { id: string; name: string; latest_revision_id: string; status: string };
    };
    const finished = async (as: Client, id: string, revision: string) =>
      (await as('GET', `/v2/deployments/${id}/revisions/${revision}?wait_for_terminal=60`)).body as { status: string; status_message: string | null };
    const envOf = (deploymentId: string) => runtime.started.find((r) => r.deploymentId === deploymentId)?.env ?? {};
    const deleted = async (as: Client, id: string) => {
      assert.equal((await as('DELETE', `/v2/deployments/${id}`)).status, 204);
      // Gone from the API at once; gone from the database (with what it held) once the engine has torn it down.
      await eventually(
        async () => (await server.berth.db.selectFrom('deployments').select('id').where('id', '=', id).execute()).length === 0,
        'the deployment to be torn down',
        30_000,
      );
    };

    test('a deployment gets its own database and Redis user, usable with what its container gets, and loses them on delete', async () => {
      const created = await create(api, 'with-databases');
      assert.equal(created.status, 'AWAITING_DATABASE');
      assert.equal((await finished(api, created.id, created.latest_revision_id)).status, 'DEPLOYED');
      assert.equal((await api('GET', `/v2/deployments/${created.id}`)).body.status, 'READY');

      const env = envOf(created.id);
      assert.match(env.POSTGRES_URI ?? '', /^postgres:\/\/berth_[0-9a-f]{24}:[^@]+@127\.0\.0\.1:5432\/berth_[0-9a-f]{24}$/);
      assert.match(env.REDIS_URI ?? '', new RegExp(`^redis://berth-[0-9a-f]{24}:[^@]+@127\\.0\\.0\\.1:${redis.port}$`));
      assert.match(env.REDIS_KEY_PREFIX ?? '', /^berth:[0-9a-f]{24}:$/);
      for (const secret of [new URL(env.POSTGRES_URI as string).password, new URL(env.REDIS_URI as string).password]) {
        assert.ok(!server.logs.join('').includes(secret), 'no password reaches the log');
      }

      await postgresRows(env.POSTGRES_URI as string, 'create table notes (body text)');
      await postgresRows(env.POSTGRES_URI as string, "insert into notes values ('kept')");
      assert.deepEqual(await postgresRows(env.POSTGRES_URI as string, 'select body from notes'), [{ body: 'kept' }]);
      const [names] = await postgresRows<{ d: string; u: string }>(env.POSTGRES_URI as string, 'select current_database() as d, current_user as u');

      const cache = await connectRedis(env.REDIS_URI as string);
      await cache.set(`${env.REDIS_KEY_PREFIX}greeting`, 'hello');
      assert.equal(await cache.get(`${env.REDIS_KEY_PREFIX}greeting`), 'hello');
      cache.destroy();

      await deleted(api, created.id);
      assert.deepEqual(await postgresRows(POSTGRES_ADMIN_URL, 'select datname from pg_database where datname = $1', [names?.d]), [], 'the database is dropped');
      assert.deepEqual(await postgresRows(POSTGRES_ADMIN_URL, 'select rolname from pg_roles where rolname = $1', [names?.u]), [], 'the role is dropped');
      const admin = await connectRedis(redis.adminUrl);
      assert.equal(await admin.sendCommand(['ACL', 'GETUSER', new URL(env.REDIS_URI as string).username]), null, 'the Redis user is removed');
      assert.deepEqual(await admin.keys(`${env.REDIS_KEY_PREFIX}*`), [], 'and its keys');
      admin.destroy();
    });

    test("a hostile member of another workspace, with its deployment's URIs, cannot reach the victim's database or keys, nor learn its name or id", async () => {
      const victim = await create(api, 'victim-agent');
      const hostileMember = await newMember();
      const hostile = await create(hostileMember, 'hostile-agent');
      assert.equal((await finished(api, victim.id, victim.latest_revision_id)).status, 'DEPLOYED');
      assert.equal((await finished(hostileMember, hostile.id, hostile.latest_revision_id)).status, 'DEPLOYED');
      const mine = envOf(victim.id);
      const theirs = envOf(hostile.id);

      // The victim is connected and busy while the hostile role looks around.
      const session = new pg.Client({ connectionString: mine.POSTGRES_URI, application_name: 'agent' });
      session.on('error', () => {});
      await session.connect();
      await session.query('create table secrets (body text)');
      try {
        const victimDatabase = new URL(mine.POSTGRES_URI as string).pathname.slice(1);
        const intruder = new URL(theirs.POSTGRES_URI as string);
        intruder.pathname = `/${victimDatabase}`;
        await assert.rejects(postgresRows(intruder.toString(), 'select 1'), /permission denied for database/);
        const seen = JSON.stringify([
          await postgresRows(theirs.POSTGRES_URI as string, "select datname, shobj_description(oid, 'pg_database') as comment from pg_database"),
          await postgresRows(theirs.POSTGRES_URI as string, 'select rolname from pg_roles'),
          await postgresRows(theirs.POSTGRES_URI as string, 'select * from pg_stat_activity'),
          await postgresRows(theirs.POSTGRES_URI as string, 'select * from pg_shdescription'),
        ]);
        assert.ok(seen.includes(victimDatabase), 'the catalogs were read (they list the database under its random name)');
        for (const trace of [victim.id, victim.id.replace(/-/g, ''), victim.name]) {
          assert.ok(!seen.includes(trace), `the hostile role sees no '${trace}'`);
        }
      } finally {
        await session.end();
      }

      const victimCache = await connectRedis(mine.REDIS_URI as string);
      await victimCache.set(`${mine.REDIS_KEY_PREFIX}run`, 'victim');
      const attacker = await connectRedis(theirs.REDIS_URI as string);
      try {
        await assert.rejects(attacker.get(`${mine.REDIS_KEY_PREFIX}run`), /NOPERM/);
        await assert.rejects(attacker.set(`${mine.REDIS_KEY_PREFIX}run`, 'x'), /NOPERM/);
        await assert.rejects(attacker.sendCommand(['KEYS', '*']), /NOPERM/);
        await assert.rejects(attacker.sendCommand(['SCAN', '0']), /NOPERM/);
        await assert.rejects(attacker.sendCommand(['FLUSHALL']), /NOPERM/);
        assert.equal(await victimCache.get(`${mine.REDIS_KEY_PREFIX}run`), 'victim');
      } finally {
        attacker.destroy();
        victimCache.destroy();
      }
      await deleted(api, victim.id);
      await deleted(hostileMember, hostile.id);
    });

    test('beyond its limit a workspace gets CREATE_FAILED (409 at create once known full) naming it, never affecting another; a delete frees a place', async () => {
      const full = await newMember();
      const other = await newMember();
      const own = [
        { name: 'POSTGRES_URI_CUSTOM', value: 'postgres://elsewhere.example/db' },
        { name: 'REDIS_URI_CUSTOM', value: 'redis://elsewhere.example' },
      ];
      // Four deployments that bring their own databases (they pass the check at create and count for nothing)...
      const racing = await Promise.all([1, 2, 3, 4].map((n) => create(full, `racing-${n}`, own)));
      for (const d of racing) assert.equal((await finished(full, d.id, d.latest_revision_id)).status, 'DEPLOYED');
      // ...then all stop at once, in a workspace allowed two: only the engine decides, and exactly two get databases.
      const patched = await Promise.all(
        racing.map((d) => full('PATCH', `/v2/deployments/${d.id}`, { body: { secrets: [{ name: 'MODE', value: 'shared' }] } })),
      );
      for (const res of patched) assert.equal(res.status, 200, res.text);
      const outcomes = await Promise.all(patched.map((res) => finished(full, res.body.id, res.body.latest_revision_id)));
      assert.deepEqual(outcomes.map((o) => o.status).sort(), ['CREATE_FAILED', 'CREATE_FAILED', 'DEPLOYED', 'DEPLOYED']);
      for (const failed of outcomes.filter((o) => o.status === 'CREATE_FAILED')) {
        assert.match(
          failed.status_message ?? '',
          /This workspace already has 2 deployments with a PostgreSQL database provisioned by Berth, its limit \(BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE\)/,
        );
      }

      // Now that the workspace is known to be full, a new deployment is refused at create.
      const refused = await full('POST', '/v2/deployments', {
        body: {
          name: 'one-too-many',
          source: 'external_docker',
          source_config: {},
          source_revision_config: { image_uri: 'registry.local/agent:v1' },
          secrets: [],
        },
      });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.code, 'database_limit_reached');
      assert.match(
        refused.body.detail,
        /already has 2 deployments with a PostgreSQL database provisioned by Berth, its limit \(BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE\)/,
      );
      assert.equal((await full('GET', '/v2/deployments?name_contains=one-too-many')).body.resources.length, 0, 'nothing was created');

      // Another workspace is not affected, and deployments bringing their own still may be created.
      const elsewhere = await create(other, 'elsewhere');
      assert.equal((await finished(other, elsewhere.id, elsewhere.latest_revision_id)).status, 'DEPLOYED');
      const ownDatabases = await create(full, 'brings-its-own', own);
      assert.equal((await finished(full, ownDatabases.id, ownDatabases.latest_revision_id)).status, 'DEPLOYED');

      // A delete frees a place: a deployment that failed for the limit gets its databases with its next revision.
      const deployed = patched.filter((_, i) => outcomes[i]?.status === 'DEPLOYED').map((res) => res.body as { id: string; latest_revision_id: string });
      const failed = patched.filter((_, i) => outcomes[i]?.status === 'CREATE_FAILED').map((res) => res.body as { id: string; latest_revision_id: string });
      await deleted(full, (deployed[0] as { id: string }).id);
      const retried = failed[0] as { id: string; latest_revision_id: string };
      const retry = await full('POST', `/v2/deployments/${retried.id}/revisions/${retried.latest_revision_id}/redeploy`);
      assert.equal(retry.status, 200, retry.text);
      const next = retry.body.latest_revision_id as string;
      const again = await finished(full, retried.id, next);
      assert.equal(again.status, 'DEPLOYED', again.status_message ?? '');
      for (const d of [...deployed.slice(1), ...failed, ownDatabases]) await deleted(full, d.id);
      await deleted(other, elsewhere.id);
    });

    test('a deployment whose database an earlier version provisioned keeps it, named as it was, without its comment, and loses it on delete', async () => {
      const own = [
        { name: 'POSTGRES_URI_CUSTOM', value: 'postgres://elsewhere.example/db' },
        { name: 'REDIS_URI_CUSTOM', value: 'redis://elsewhere.example' },
      ];
      const created = await create(api, 'from-before', own);
      assert.equal((await finished(api, created.id, created.latest_revision_id)).status, 'DEPLOYED');
      // What an earlier version left: a database named after the deployment, with its name and id in a comment.
      const names = legacyPostgresNames(created.id);
      const password = randomBytes(24).toString('base64url');
      await postgresRows(POSTGRES_ADMIN_URL, `CREATE ROLE ${names.role} LOGIN PASSWORD '${password}'`);
      await postgresRows(POSTGRES_ADMIN_URL, `CREATE DATABASE ${names.database} OWNER ${names.role}`);
      await postgresRows(POSTGRES_ADMIN_URL, `COMMENT ON DATABASE ${names.database} IS 'Berth deployment from-before (${created.id})'`);
      const uri = `postgres://${names.role}:${password}@127.0.0.1:5432/${names.database}`;
      const encryptor = new Encryptor(loadEncryptionKey(undefined, server.dataDir).key);
      await server.berth.db
        .insertInto('deployment_resources')
        .values({
          deployment_id: created.id,
          kind: 'postgres',
          uri_encrypted: encryptor.encrypt(uri, resourceUriContext(created.id, 'postgres')),
          created_at: new Date().toISOString(),
          names: null,
          ready: 1,
        })
        .execute();

      // It stops bringing its own: its database stays the one it had; Redis is provisioned anew.
      const patched = await api('PATCH', `/v2/deployments/${created.id}`, { body: { secrets: [{ name: 'MODE', value: 'shared' }] } });
      assert.equal(patched.status, 200, patched.text);
      const outcome = await finished(api, created.id, patched.body.latest_revision_id);
      assert.equal(outcome.status, 'DEPLOYED', outcome.status_message ?? '');
      const env = runtime.started.filter((r) => r.deploymentId === created.id).at(-1)?.env ?? {};
      assert.equal(env.POSTGRES_URI, uri);
      assert.match(env.REDIS_KEY_PREFIX ?? '', /^berth:[0-9a-f]{24}:$/);
      const [after] = await postgresRows<{ comment: string | null }>(
        POSTGRES_ADMIN_URL,
        "SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1",
        [names.database],
      );
      assert.equal(after?.comment, null, 'the comment naming the deployment is gone');
      assert.deepEqual(await postgresRows(uri, 'SELECT current_database() AS db'), [{ db: names.database }]);

      await deleted(api, created.id);
      assert.deepEqual(await postgresRows(POSTGRES_ADMIN_URL, 'SELECT datname FROM pg_database WHERE datname = $1', [names.database]), []);
      assert.deepEqual(await postgresRows(POSTGRES_ADMIN_URL, 'SELECT rolname FROM pg_roles WHERE rolname = $1', [names.role]), []);
    });

    if (kind === 'sqlite') {
      test('a database server that does not answer ends the revision CREATE_FAILED, naming it', async () => {
        const closed = await freePort();
        const failing = await startTestServer('sqlite', {
          overrides: { runtime },
          provisioning: { postgresUrl: `postgres://postgres:sesame-${closed}@127.0.0.1:${closed}/postgres` },
        });
        try {
          const other = client(failing.url, { key: failing.adminKey });
          const created = await create(other, 'no-database');
          const revision = (await other('GET', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}?wait_for_terminal=120`)).body;
          assert.equal(revision.status, 'CREATE_FAILED', JSON.stringify(revision));
          assert.match(revision.status_message, new RegExp(`127\\.0\\.0\\.1:${closed}`));
          assert.ok(!JSON.stringify(revision).includes(`sesame-${closed}`), 'the password is not in the message');
          // Never READY without its database; with nothing serving and nothing in flight it is UNUSED.
          await eventually(async () => (await other('GET', `/v2/deployments/${created.id}`)).body.status === 'UNUSED', 'the deployment to settle');
        } finally {
          await failing.close();
        }
      });
    }
  },
  {
    // Deployments' own databases live on PostgreSQL and Redis whichever database Berth itself runs on.
    needs: async () => (await postgresUnavailable()) ?? redisServerMissing(),
  },
);
