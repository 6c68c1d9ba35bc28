import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ProvisioningError } from '../../src/provisioning/errors.js';
import { deploymentPassword } from '../../src/provisioning/passwords.js';
import { PostgresProvisioner, postgresNamesFor } from '../../src/provisioning/postgres.js';
import { POSTGRES_ADMIN_URL, postgresUnavailable } from '../support/server.js';

const passwordKey = randomBytes(32);

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

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function leftovers(deploymentId: string): Promise<{ databases: number; roles: number }> {
  const { database, role } = postgresNamesFor(deploymentId);
  const [row] = await query<{ databases: string; roles: string }>(
    POSTGRES_ADMIN_URL,
    'SELECT (SELECT count(*) FROM pg_database WHERE datname = $1) AS databases, (SELECT count(*) FROM pg_roles WHERE rolname = $2) AS roles',
    [database, role],
  );
  return { databases: Number(row?.databases), roles: Number(row?.roles) };
}

describe('PostgreSQL per deployment', async () => {
  const skip = await postgresUnavailable();
  if (skip) {
    it('needs a PostgreSQL server', { skip }, () => {});
    return;
  }
  const provisioner = new PostgresProvisioner({ adminUrl: POSTGRES_ADMIN_URL, passwordKey });
  const deployments: string[] = [];
  const newDeployment = () => {
    const id = randomUUID();
    deployments.push(id);
    return id;
  };
  const extraRoles: string[] = [];

  after(async () => {
    for (const id of deployments) await provisioner.deprovision(id);
    for (const role of extraRoles) await query(POSTGRES_ADMIN_URL, `DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
  });

  it('creates a database and a role the container can use, and no one else can open', async () => {
    const id = newDeployment();
    const { uri, database, role } = await provisioner.provision(id, 'my-agent');
    assert.deepEqual({ database, role }, postgresNamesFor(id));
    assert.equal(database, `berth_${id.replace(/-/g, '')}`);
    const parsed = new URL(uri);
    assert.deepEqual(
      [parsed.protocol, parsed.hostname, parsed.port, parsed.username, parsed.pathname],
      ['postgres:', '127.0.0.1', '5432', role, `/${database}`],
    );
    assert.equal(decodeURIComponent(parsed.password), deploymentPassword(passwordKey, 'postgres', id));

    await query(uri, 'CREATE TABLE checkpoints (id text PRIMARY KEY, body text)');
    await query(uri, "INSERT INTO checkpoints VALUES ('a', 'first')");
    assert.deepEqual(await query(uri, 'SELECT body FROM checkpoints'), [{ body: 'first' }]);

    const [attributes] = await query<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean; owner: string; comment: string }>(
      POSTGRES_ADMIN_URL,
      `SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole, pg_get_userbyid(d.datdba) AS owner, shobj_description(d.oid, 'pg_database') AS comment
         FROM pg_roles r, pg_database d WHERE r.rolname = $1 AND d.datname = $2`,
      [role, database],
    );
    assert.deepEqual(attributes, { rolsuper: false, rolcreatedb: false, rolcreaterole: false, owner: role, comment: `Berth deployment my-agent (${id})` });

    // Another deployment's role cannot connect to this database.
    const other = await provisioner.provision(newDeployment(), 'other');
    const intruder = new URL(other.uri);
    intruder.pathname = `/${database}`;
    await assert.rejects(query(intruder.toString(), 'SELECT 1'), /permission denied for database/);
  });

  it('provisioning again returns the same working URI, keeps the data and creates nothing twice', async () => {
    const id = newDeployment();
    const first = await provisioner.provision(id, 'again');
    await query(first.uri, 'CREATE TABLE kept (n int)');
    const again = await provisioner.provision(id, 'again');
    assert.deepEqual(again, first);
    assert.deepEqual(await query(again.uri, 'SELECT count(*)::int AS n FROM kept'), [{ n: 0 }]);
    assert.deepEqual(await leftovers(id), { databases: 1, roles: 1 });
  });

  it('concurrent calls for one deployment all succeed with the same URI', async () => {
    const id = newDeployment();
    const results = await Promise.all(Array.from({ length: 4 }, () => provisioner.provision(id, 'racy')));
    assert.equal(new Set(results.map((result) => result.uri)).size, 1);
    assert.deepEqual(await query(results[0]?.uri as string, 'SELECT 1 AS one'), [{ one: 1 }]);
    assert.deepEqual(await leftovers(id), { databases: 1, roles: 1 });
  });

  it('deprovision ends open sessions and leaves no database or role; again is fine', async () => {
    const id = newDeployment();
    const { uri } = await provisioner.provision(id, 'doomed');
    const session = new pg.Client({ connectionString: uri });
    session.on('error', () => {});
    await session.connect();
    await provisioner.deprovision(id);
    assert.deepEqual(await leftovers(id), { databases: 0, roles: 0 });
    await assert.rejects(session.query('SELECT 1'));
    await session.end().catch(() => {});
    await provisioner.deprovision(id);
  });

  it('works with an admin role that has CREATEROLE and CREATEDB but is not a superuser', async () => {
    const adminRole = `berth_test_admin_${randomBytes(6).toString('hex')}`;
    extraRoles.push(adminRole);
    await query(POSTGRES_ADMIN_URL, `CREATE ROLE ${adminRole} LOGIN CREATEROLE CREATEDB`);
    const adminUrl = new URL(POSTGRES_ADMIN_URL);
    adminUrl.username = adminRole;
    const limited = new PostgresProvisioner({ adminUrl: adminUrl.toString(), passwordKey });
    const id = randomUUID();
    const { uri } = await limited.provision(id, 'limited');
    assert.deepEqual(await query(uri, 'SELECT current_user AS me'), [{ me: postgresNamesFor(id).role }]);
    await limited.deprovision(id);
    assert.deepEqual(await leftovers(id), { databases: 0, roles: 0 });
  });

  it('an admin role without the privileges gives an error that says which ones', async () => {
    const weakRole = `berth_test_weak_${randomBytes(6).toString('hex')}`;
    extraRoles.push(weakRole);
    await query(POSTGRES_ADMIN_URL, `CREATE ROLE ${weakRole} LOGIN`);
    const adminUrl = new URL(POSTGRES_ADMIN_URL);
    adminUrl.username = weakRole;
    const id = randomUUID();
    await assert.rejects(new PostgresProvisioner({ adminUrl: adminUrl.toString(), passwordKey }).provision(id, 'x'), (error: unknown) => {
      assert.ok(error instanceof ProvisioningError);
      assert.match(
        error.message,
        /^Could not create the database of deployment [0-9a-f-]+: PostgreSQL at 127\.0\.0\.1:5432 denied it \(permission denied to create role\)/,
      );
      assert.match(error.message, /needs CREATEROLE and CREATEDB, or superuser\.$/);
      assert.doesNotMatch(error.message, new RegExp(deploymentPassword(passwordKey, 'postgres', id)));
      return true;
    });
    assert.deepEqual(await leftovers(id), { databases: 0, roles: 0 });
  });

  it('a server that is down gives an error naming it, without the password', async () => {
    const port = await freePort();
    const down = new PostgresProvisioner({ adminUrl: `postgres://postgres:very-secret-admin@127.0.0.1:${port}/postgres`, passwordKey, connectTimeoutMs: 2000 });
    await assert.rejects(down.provision(randomUUID(), 'x'), (error: unknown) => {
      assert.ok(error instanceof ProvisioningError);
      assert.match(
        error.message,
        new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port} is not reachable \\(ECONNREFUSED\\)\\. Check BERTH_DEPLOYMENT_POSTGRES_URL`),
      );
      assert.doesNotMatch(error.message, /very-secret-admin/);
      return true;
    });
    await assert.rejects(down.deprovision(randomUUID()), {
      message: /^Could not drop the database of deployment [0-9a-f-]+: PostgreSQL at 127\.0\.0\.1:\d+ is not reachable/,
    });
  });

  it('names the host containers use when told to', async () => {
    const id = newDeployment();
    const bridged = new PostgresProvisioner({
      adminUrl: `${POSTGRES_ADMIN_URL}?application_name=berth`,
      passwordKey,
      containerHost: 'host.containers.internal',
      containerPort: 15432,
    });
    const { uri } = await bridged.provision(id, 'bridged');
    const parsed = new URL(uri);
    assert.deepEqual([parsed.hostname, parsed.port, parsed.search], ['host.containers.internal', '15432', '']);
  });
});

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
    const provisioner = new PostgresProvisioner({ adminUrl, passwordKey });
    const id = randomUUID();
    const { uri } = await provisioner.provision(id, 'scram');
    assert.deepEqual(await query(uri, 'SELECT current_user AS me'), [{ me: postgresNamesFor(id).role }]);
    const wrong = new URL(uri);
    wrong.password = 'not-the-password';
    await assert.rejects(query(wrong.toString(), 'SELECT 1'), /password authentication failed/);
    // Provisioning again sets a new verifier for the same password: the URI keeps working.
    await provisioner.provision(id, 'scram');
    assert.deepEqual(await query(uri, 'SELECT 1 AS one'), [{ one: 1 }]);
    await provisioner.deprovision(id);
    await assert.rejects(query(uri, 'SELECT 1'), /password authentication failed|does not exist/);
  });
});
