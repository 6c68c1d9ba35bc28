import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import { ProvisioningError } from '../../src/provisioning/errors.js';
import { RedisProvisioner, redisUserFor } from '../../src/provisioning/redis.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const passwordKey = randomBytes(32);

type Client = ReturnType<typeof createClient>;

async function connect(url: string, database?: number): Promise<Client> {
  const client = createClient({ url, database, socket: { connectTimeout: 3000, reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  return client;
}

async function redisUnavailable(url: string): Promise<string | null> {
  try {
    const client = await connect(url);
    client.destroy();
    return null;
  } catch (error) {
    return `Redis at ${url} is not reachable (${(error as Error).message})`;
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('Redis per deployment', async () => {
  const skip = await redisUnavailable(REDIS_URL);
  if (skip) {
    it('needs a Redis server', { skip }, () => {});
    return;
  }
  const provisioner = new RedisProvisioner({ adminUrl: REDIS_URL, passwordKey });
  const deployments: string[] = [];
  const clients: Client[] = [];
  const newDeployment = () => {
    const id = randomUUID();
    deployments.push(id);
    return id;
  };
  let admin: Client;

  before(async () => {
    admin = await connect(REDIS_URL);
  });
  after(async () => {
    for (const client of clients) if (client.isOpen) client.destroy();
    for (const id of deployments) await provisioner.deprovision(id);
    if (admin.isOpen) admin.destroy();
  });

  it('gives a deployment a database and a user that can use it and nothing else', async () => {
    const id = newDeployment();
    const { uri, database, user } = await provisioner.provision(id);
    assert.equal(user, redisUserFor(id));
    assert.ok(database >= 1 && database <= 14, `database ${database}`);
    assert.equal(new URL(uri).pathname, `/${database}`);

    const client = await connect(uri);
    clients.push(client);
    await client.set('greeting', 'hello');
    assert.equal(await client.get('greeting'), 'hello');
    await client.select(database);
    assert.equal(await client.dbSize(), 1);

    await assert.rejects(client.select(database === 1 ? 2 : 1), /NOPERM/);
    await assert.rejects(client.flushAll(), /NOPERM/);
    await assert.rejects(client.sendCommand(['MOVE', 'greeting', '0']), /NOPERM/);
    await assert.rejects(client.sendCommand(['CONFIG', 'GET', 'databases']), /NOPERM/);
    await assert.rejects(client.sendCommand(['ACL', 'LIST']), /NOPERM/);
    assert.match(String(await client.sendCommand(['INFO', 'server'])), /redis_version/);

    const wrong = new URL(uri);
    wrong.password = 'not-the-password';
    await assert.rejects(connect(wrong.toString()), /WRONGPASS/);
  });

  it('provisioning again returns the same working URI and keeps the data', async () => {
    const id = newDeployment();
    const first = await provisioner.provision(id);
    const client = await connect(first.uri);
    clients.push(client);
    await client.set('kept', '1');
    const again = await provisioner.provision(id);
    assert.deepEqual(again, first);
    assert.equal(await client.get('kept'), '1', 'the connection of the running container still works');
    const fresh = await connect(again.uri);
    clients.push(fresh);
    assert.equal(await fresh.get('kept'), '1');
  });

  it('concurrent calls never share or duplicate a database', async () => {
    const a = newDeployment();
    const b = newDeployment();
    const results = await Promise.all([a, a, b, a, b].map((id) => provisioner.provision(id)));
    const [a1, a2, b1, a3, b2] = results.map((result) => result.database);
    assert.equal(new Set([a1, a2, a3]).size, 1);
    assert.equal(b1, b2);
    assert.notEqual(a1, b1);
    await admin.select(15);
    const records = await admin.hGetAll('berth:deployment-databases');
    assert.equal(records[a], String(a1));
    assert.equal(Object.values(records).filter((value) => value === String(a1)).length, 1);
  });

  it('deprovision removes the user and the keys and disconnects the container; again is fine', async () => {
    const id = newDeployment();
    const { uri, database, user } = await provisioner.provision(id);
    const client = await connect(uri);
    clients.push(client);
    await client.set('doomed', 'x');
    await provisioner.deprovision(id);

    assert.equal(await admin.sendCommand(['ACL', 'GETUSER', user]), null);
    await admin.select(database);
    assert.equal(await admin.dbSize(), 0);
    await admin.select(15);
    assert.equal(await admin.hGet('berth:deployment-databases', id), null);
    await assert.rejects(client.get('doomed'));
    await assert.rejects(connect(uri), /WRONGPASS/);
    await provisioner.deprovision(id);
  });

  it('a server that is down gives an error naming it, without the password', async () => {
    const port = await freePort();
    const down = new RedisProvisioner({ adminUrl: `redis://admin:very-secret-admin@127.0.0.1:${port}`, passwordKey, connectTimeoutMs: 2000 });
    await assert.rejects(down.provision(randomUUID()), (error: unknown) => {
      assert.ok(error instanceof ProvisioningError);
      assert.match(
        error.message,
        new RegExp(`^Could not set up Redis for deployment [0-9a-f-]+: Redis at 127\\.0\\.0\\.1:${port} is not reachable \\(ECONNREFUSED\\)`),
      );
      assert.doesNotMatch(error.message, /very-secret-admin/);
      return true;
    });
  });
});

describe('Redis databases are allocated only when free', async () => {
  const redisServer = spawn('redis-server', ['--version']);
  const present = await new Promise<boolean>((resolve) => {
    redisServer.on('error', () => resolve(false));
    redisServer.on('exit', (code) => resolve(code === 0));
  });
  if (!present) {
    it('needs redis-server to run a Redis of its own', { skip: 'redis-server is not installed' }, () => {});
    return;
  }
  let server: ChildProcess;
  let url: string;

  before(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    // A Redis of its own with 4 databases: 0 (never handed out), 1 and 2 (for deployments), 3 (records).
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--databases', '4'], {
      detached: true,
      stdio: 'ignore',
    });
    for (let attempt = 0; ; attempt++) {
      try {
        (await connect(url)).destroy();
        break;
      } catch (error) {
        if (attempt > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  });
  after(() => {
    if (server.pid) process.kill(-server.pid, 'SIGKILL');
  });

  it('skips a database holding keys Berth did not write, and says when none is left', async () => {
    const client = await connect(url, 1);
    await client.set('operator-data', 'keep me');
    const provisioner = new RedisProvisioner({ adminUrl: url, passwordKey });
    const first = await provisioner.provision(randomUUID());
    assert.equal(first.database, 2);
    await assert.rejects(provisioner.provision(randomUUID()), {
      message: /every database of the Redis at 127\.0\.0\.1:\d+ is taken \(by other deployments or by keys Berth did not write\)/,
    });
    assert.equal(await client.get('operator-data'), 'keep me');
    client.destroy();
  });
});
