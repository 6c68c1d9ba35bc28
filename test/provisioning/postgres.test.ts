import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ProvisioningError } from '../../src/provisioning/errors.js';
import {
  legacyPostgresNames,
  newPostgresCredentials,
  type PostgresCredentials,
  type PostgresNames,
  PostgresProvisioner,
} from '../../src/provisioning/postgres.js';
import { freePort } from '../support/process.js';
import { POSTGRES_ADMIN_URL } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

async function leftovers({ database, role }: PostgresNames): Promise<{ databases: number; roles: number }> {
  const [row] = await query<{ databases: string; roles: string }>(
    POSTGRES_ADMIN_URL,
    'SELECT (SELECT count(*) FROM pg_database WHERE datname = $1) AS databases, (SELECT count(*) FROM pg_roles WHERE rolname = $2) AS roles',
    [database, role],
  );
  return { databases: Number(row?.databases), roles: Number(row?.roles) };
}

describeEachDatabase(
  'PostgreSQL per deployment',
  () => {
    const provisioner = new PostgresProvisioner({ adminUrl: POSTGRES_ADMIN_URL, perWorkspace: 100 });
    const made: PostgresNames[] = [];
    const provisioned = async (using = provisioner): Promise<PostgresCredentials & { uri: string }> => {
      const credentials = newPostgresCredentials();
      made.push(credentials);
      await using.provision(credentials);
      return { ...credentials, uri: using.uriFor(credentials) };
    };
    const extraRoles: string[] = [];

    after(async () => {
      for (const names of made) await provisioner.deprovision(names);
      for (const role of extraRoles) await query(POSTGRES_ADMIN_URL, `DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
    });

    it('creates a database and a role of one random name, usable with the URI, with no comment and nothing for PUBLIC', async () => {
      const own = await provisioned();
      assert.match(own.database, /^berth_[0-9a-f]{24}$/);
      assert.equal(own.role, own.database);
      const parsed = new URL(own.uri);
      assert.deepEqual(
        [parsed.protocol, parsed.hostname, parsed.port, parsed.username, decodeURIComponent(parsed.password), parsed.pathname],
        ['postgres:', '127.0.0.1', '5432', own.role, own.password, `/${own.database}`],
      );
      assert.deepEqual(provisioner.credentialsOf(own.uri), { database: own.database, role: own.role, password: own.password });

      await query(own.uri, 'CREATE TABLE checkpoints (id text PRIMARY KEY, body text)');
      await query(own.uri, "INSERT INTO checkpoints VALUES ('a', 'first')");
      assert.deepEqual(await query(own.uri, 'SELECT body FROM checkpoints'), [{ body: 'first' }]);

      const [attributes] = await query<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean; owner: string; comment: string | null; acl: string }>(
        POSTGRES_ADMIN_URL,
        `SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole, pg_get_userbyid(d.datdba) AS owner,
              shobj_description(d.oid, 'pg_database') AS comment, d.datacl::text AS acl
         FROM pg_roles r, pg_database d WHERE r.rolname = $1 AND d.datname = $2`,
        [own.role, own.database],
      );
      assert.deepEqual(
        { ...attributes, acl: undefined },
        { rolsuper: false, rolcreatedb: false, rolcreaterole: false, owner: own.role, comment: null, acl: undefined },
      );
      assert.doesNotMatch(attributes?.acl ?? '', /(^|[{,])=/, 'PUBLIC (an empty grantee) holds no privilege on the database');
    });

    it("another deployment's role can neither open the database nor create anything in it", async () => {
      const victim = await provisioned();
      const hostile = await provisioned();
      const intruder = new URL(hostile.uri);
      intruder.pathname = `/${victim.database}`;
      await assert.rejects(query(intruder.toString(), 'SELECT 1'), /permission denied for database/);
      const [privileges] = await query<{ connect: boolean; temp: boolean; create: boolean }>(
        POSTGRES_ADMIN_URL,
        `SELECT has_database_privilege($1, $2, 'CONNECT') AS connect, has_database_privilege($1, $2, 'TEMP') AS temp,
              has_database_privilege($1, $2, 'CREATE') AS create`,
        [hostile.role, victim.database],
      );
      assert.deepEqual({ ...privileges }, { connect: false, temp: false, create: false });
    });

    it('provisioning again returns the same working URI, keeps the data and creates nothing twice', async () => {
      const own = await provisioned();
      await query(own.uri, 'CREATE TABLE kept (n int)');
      await provisioner.provision(own);
      assert.deepEqual(await query(own.uri, 'SELECT count(*)::int AS n FROM kept'), [{ n: 0 }]);
      assert.deepEqual(await leftovers(own), { databases: 1, roles: 1 });
    });

    it('concurrent calls for one deployment all succeed', async () => {
      const credentials = newPostgresCredentials();
      made.push(credentials);
      await Promise.all(Array.from({ length: 4 }, () => provisioner.provision(credentials)));
      assert.deepEqual(await query(provisioner.uriFor(credentials), 'SELECT 1 AS one'), [{ one: 1 }]);
      assert.deepEqual(await leftovers(credentials), { databases: 1, roles: 1 });
    });

    it('deprovision ends open sessions and leaves no database or role; again is fine', async () => {
      const doomed = await provisioned();
      const session = new pg.Client({ connectionString: doomed.uri });
      session.on('error', () => {});
      await session.connect();
      await provisioner.deprovision(doomed);
      assert.deepEqual(await leftovers(doomed), { databases: 0, roles: 0 });
      await assert.rejects(session.query('SELECT 1'));
      await session.end().catch(() => {});
      await provisioner.deprovision(doomed);
    });

    it('keeps the database of an earlier version under its name, takes away its comment and what PUBLIC had, and drops it', async () => {
      const id = randomUUID();
      const names = legacyPostgresNames(id);
      assert.equal(names.database, `berth_${id.replace(/-/g, '')}`);
      const password = randomBytes(24).toString('base64url');
      // As earlier versions made it: the deployment's name and id in a comment, CONNECT for PUBLIC.
      await query(POSTGRES_ADMIN_URL, `CREATE ROLE ${names.role} LOGIN PASSWORD '${password}'`);
      await query(POSTGRES_ADMIN_URL, `CREATE DATABASE ${names.database} OWNER ${names.role}`);
      await query(POSTGRES_ADMIN_URL, `COMMENT ON DATABASE ${names.database} IS 'Berth deployment my-agent (${id})'`);
      made.push(names);
      const uri = provisioner.uriFor({ ...names, password });
      const session = new pg.Client({ connectionString: uri });
      session.on('error', () => {});
      await session.connect();

      await provisioner.harden(names);
      const [after] = await query<{ comment: string | null; acl: string }>(
        POSTGRES_ADMIN_URL,
        "SELECT shobj_description(oid, 'pg_database') AS comment, datacl::text AS acl FROM pg_database WHERE datname = $1",
        [names.database],
      );
      assert.equal(after?.comment, null);
      assert.doesNotMatch(after?.acl ?? '', /(^|[{,])=/);
      assert.deepEqual((await session.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the running agent server keeps its connection');
      assert.deepEqual(await query(uri, 'SELECT current_database() AS db'), [{ db: names.database }], 'and its URI keeps working');
      await session.end();

      await provisioner.deprovision(names);
      assert.deepEqual(await leftovers(names), { databases: 0, roles: 0 });
    });

    it('works with an admin role that has CREATEROLE and CREATEDB but is not a superuser', async () => {
      const adminRole = `berth_test_admin_${randomBytes(6).toString('hex')}`;
      extraRoles.push(adminRole);
      await query(POSTGRES_ADMIN_URL, `CREATE ROLE ${adminRole} LOGIN CREATEROLE CREATEDB`);
      const adminUrl = new URL(POSTGRES_ADMIN_URL);
      adminUrl.username = adminRole;
      const limited = new PostgresProvisioner({ adminUrl: adminUrl.toString(), perWorkspace: 100 });
      const own = await provisioned(limited);
      assert.deepEqual(await query(own.uri, 'SELECT current_user AS me'), [{ me: own.role }]);
      await limited.deprovision(own);
      assert.deepEqual(await leftovers(own), { databases: 0, roles: 0 });
    });

    it('an admin role without the privileges gives an error that says which ones', async () => {
      const weakRole = `berth_test_weak_${randomBytes(6).toString('hex')}`;
      extraRoles.push(weakRole);
      await query(POSTGRES_ADMIN_URL, `CREATE ROLE ${weakRole} LOGIN`);
      const adminUrl = new URL(POSTGRES_ADMIN_URL);
      adminUrl.username = weakRole;
      const credentials = newPostgresCredentials();
      await assert.rejects(new PostgresProvisioner({ adminUrl: adminUrl.toString(), perWorkspace: 100 }).provision(credentials), (error: unknown) => {
        assert.ok(error instanceof ProvisioningError);
        assert.match(
          error.message,
          /^Could not create the deployment's PostgreSQL database: PostgreSQL at 127\.0\.0\.1:5432 denied it \(permission denied to create role\)/,
        );
        assert.match(error.message, /needs CREATEROLE and CREATEDB, or superuser\.$/);
        assert.ok(!error.message.includes(credentials.password));
        return true;
      });
      assert.deepEqual(await leftovers(credentials), { databases: 0, roles: 0 });
    });

    it('a server that is down gives an error naming it, without the password', async () => {
      const port = await freePort();
      const down = new PostgresProvisioner({
        adminUrl: `postgres://postgres:very-secret-admin@127.0.0.1:${port}/postgres`,
        perWorkspace: 100,
        connectTimeoutMs: 2000,
      });
      await assert.rejects(down.provision(newPostgresCredentials()), (error: unknown) => {
        assert.ok(error instanceof ProvisioningError);
        assert.match(
          error.message,
          new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port} is not reachable \\((ECONNREFUSED|timeout expired)\\)\\. Check BERTH_DEPLOYMENT_POSTGRES_URL`),
        );
        assert.doesNotMatch(error.message, /very-secret-admin/);
        return true;
      });
      await assert.rejects(down.deprovision(newPostgresCredentials()), {
        message: /^Could not drop the deployment's PostgreSQL database: PostgreSQL at 127\.0\.0\.1:\d+ is not reachable/,
      });
    });

    it('names the host containers use when told to', () => {
      const bridged = new PostgresProvisioner({
        adminUrl: `${POSTGRES_ADMIN_URL}?application_name=berth`,
        perWorkspace: 100,
        containerHost: 'host.containers.internal',
        containerPort: 15432,
      });
      const parsed = new URL(bridged.uriFor(newPostgresCredentials()));
      assert.deepEqual([parsed.hostname, parsed.port, parsed.search], ['host.containers.internal', '15432', '']);
    });
  },
  { kinds: ['postgres'] },
);

describe('PostgreSQL per deployment, with password authentication', async () => {
  // The shared server trusts every local connection, so it cannot show that the password
  // works: this runs a throwaway cluster that requires SCRAM-SHA-256.
  const initdb = spawnSync('initdb', ['--version']);
  const canSwitchUser = process.getuid?.() === 0 && spawnSync('runuser', ['-u', 'postgres', '--', 'true']).status === 0;
  const skip = initdb.status !== 0 ? 'initdb is not installed' : !canSwitchUser ? 'needs root to run initdb as the postgres user' : undefined;
  if (skip) {
    it('needs a throwaway cluster', { skip }, () => {});
    return;
  }
  let dir: string;
  let adminUrl: string;
  const asPostgres = (...args: string[]) => {
    const result = spawnSync('runuser', ['-u', 'postgres', '--', ...args], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pg-scram-'));
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim())) as [number, number];
    fs.chownSync(dir, uid, gid);
    const adminPassword = randomBytes(18).toString('base64url');
    fs.writeFileSync(path.join(dir, 'pw'), adminPassword, { mode: 0o600 });
    fs.chownSync(path.join(dir, 'pw'), uid, gid);
    asPostgres('initdb', '-D', path.join(dir, 'data'), '-A', 'scram-sha-256', '-U', 'postgres', `--pwfile=${path.join(dir, 'pw')}`);
    const port = await freePort();
    asPostgres('pg_ctl', '-D', path.join(dir, 'data'), '-l', path.join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start');
    adminUrl = `postgres://postgres:${adminPassword}@127.0.0.1:${port}/postgres`;
  });
  after(() => {
    if (fs.existsSync(path.join(dir, 'data', 'postmaster.pid'))) asPostgres('pg_ctl', '-D', path.join(dir, 'data'), '-m', 'immediate', 'stop');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the returned URI authenticates, and the wrong password does not', async () => {
    const provisioner = new PostgresProvisioner({ adminUrl, perWorkspace: 100 });
    const credentials = newPostgresCredentials();
    await provisioner.provision(credentials);
    const uri = provisioner.uriFor(credentials);
    assert.deepEqual(await query(uri, 'SELECT current_user AS me'), [{ me: credentials.role }]);
    const wrong = new URL(uri);
    wrong.password = 'not-the-password';
    await assert.rejects(query(wrong.toString(), 'SELECT 1'), /password authentication failed/);
    // Provisioning again sets a new verifier for the same password: the URI keeps working.
    await provisioner.provision(credentials);
    assert.deepEqual(await query(uri, 'SELECT 1 AS one'), [{ one: 1 }]);
    await provisioner.deprovision(credentials);
    await assert.rejects(query(uri, 'SELECT 1'), /password authentication failed|does not exist/);
  });
});
