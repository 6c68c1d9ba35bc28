import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ProvisioningError } from '../../src/provisioning/errors.js';
import { newRedisCredentials, type RedisCredentials, RedisProvisioner } from '../../src/provisioning/redis.js';
import { legacyRedisUser } from '../../src/provisioning/redis-legacy.js';
import { freePort } from '../support/process.js';
import { connectRedis, type RedisClient, redisServerMissing, startRedis, type TestRedis } from '../support/redis.js';
import { eventually } from '../support/runtimes.js';

const NOPERM = /NOPERM|can't access|can't run/;

/**
 * Issue 20: per-deployment Redis is an ACL user limited to a random key prefix on one
 * shared database (no pool of database numbers to run out of), and a hostile agent server
 * holding its own REDIS_URI can neither read, write, list nor flush another deployment's
 * keys or channels. Against a real redis-server of the test's own, set up as Berth
 * requires (its `default` user off).
 */
describe('Redis per deployment', { skip: redisServerMissing() ?? false }, () => {
  let redis: TestRedis;
  let provisioner: RedisProvisioner;
  let admin: RedisClient;
  const clients: RedisClient[] = [];
  const connect = async (uri: string) => {
    const client = await connectRedis(uri);
    clients.push(client);
    return client;
  };
  const provisioned = async (): Promise<RedisCredentials & { uri: string }> => {
    const credentials = newRedisCredentials();
    await provisioner.provision(credentials);
    return { ...credentials, uri: provisioner.uriFor(credentials) };
  };

  before(async () => {
    redis = await startRedis();
    provisioner = new RedisProvisioner({ adminUrl: redis.adminUrl, perWorkspace: 100 });
    admin = await connectRedis(redis.adminUrl);
  });
  after(async () => {
    for (const client of clients) if (client.isOpen) client.destroy();
    if (admin?.isOpen) admin.destroy();
    await redis?.stop();
  });

  it('gives a deployment a user of random name whose keys and channels must carry its random prefix', async () => {
    const own = await provisioned();
    assert.match(own.user, /^berth-[0-9a-f]{24}$/);
    assert.match(own.prefix, /^berth:[0-9a-f]{24}:$/);
    const uri = new URL(own.uri);
    assert.deepEqual([uri.username, decodeURIComponent(uri.password), uri.pathname], [own.user, own.password, '']);

    const client = await connect(own.uri);
    await client.set(`${own.prefix}greeting`, 'hello');
    assert.equal(await client.get(`${own.prefix}greeting`), 'hello');
    await client.lPush(`${own.prefix}queue`, 'job');
    assert.deepEqual(await client.brPop(`${own.prefix}queue`, 1), { key: `${own.prefix}queue`, element: 'job' });
    await client.xAdd(`${own.prefix}stream`, '*', { message: 'm' });
    assert.equal(await client.eval(`return redis.call('GET', KEYS[1])`, { keys: [`${own.prefix}greeting`] }), 'hello');
    assert.equal(await client.publish(`${own.prefix}run:cancel`, 'x'), 0);
    await assert.rejects(client.set('greeting', 'unprefixed'), NOPERM);
    assert.match(String(await client.sendCommand(['INFO', 'server'])), /redis_version/);

    const wrong = new URL(own.uri);
    wrong.password = 'not-the-password';
    await assert.rejects(connectRedis(wrong.toString()), /WRONGPASS/);
  });

  it("a hostile deployment with its own URI cannot read, write, list, flush or listen to another deployment's keys and channels", async () => {
    const victim = await provisioned();
    const hostile = await provisioned();
    const mine = await connect(victim.uri);
    await mine.set(`${victim.prefix}secret`, 'victim data');
    await mine.xAdd(`${victim.prefix}stream`, '*', { message: 'victim output' });
    await mine.hSet(`${victim.prefix}hash`, 'field', 'value');
    const heard: string[] = [];
    const listener = await connect(victim.uri);
    await listener.subscribe(`${victim.prefix}run:cancel`, (message) => heard.push(message));

    const attacker = await connect(hostile.uri);
    const theirs = `${victim.prefix}secret`;
    const attempts: [string, string[]][] = [
      ['read', ['GET', theirs]],
      ['write', ['SET', theirs, 'overwritten']],
      ['delete', ['DEL', theirs]],
      ['rename away', ['RENAME', theirs, `${hostile.prefix}stolen`]],
      ['dump', ['DUMP', theirs]],
      ['probe', ['EXISTS', theirs]],
      ['inspect', ['OBJECT', 'ENCODING', theirs]],
      ['read a stream', ['XREAD', 'STREAMS', `${victim.prefix}stream`, '0']],
      ['read a hash', ['HGETALL', `${victim.prefix}hash`]],
      ['read through a script', ['EVAL', `return redis.call('GET', '${theirs}')`, '0']],
      ['list through a script', ['EVAL', `return redis.call('KEYS', '*')`, '0']],
      ['list keys', ['KEYS', '*']],
      ['scan keys', ['SCAN', '0']],
      ['pick a key', ['RANDOMKEY']],
      ['count keys', ['DBSIZE']],
      ['sort by keys of others', ['SORT', `${hostile.prefix}list`, 'BY', `${victim.prefix}*`]],
      ['flush the database', ['FLUSHDB']],
      ['flush every database', ['FLUSHALL']],
      ['swap databases', ['SWAPDB', '0', '1']],
      ['select another database', ['SELECT', '1']],
      ['move a key away', ['MOVE', `${hostile.prefix}x`, '1']],
      ['copy to another database', ['COPY', `${hostile.prefix}x`, `${hostile.prefix}y`, 'DB', '1']],
      ['publish on its channel', ['PUBLISH', `${victim.prefix}run:cancel`, 'forged']],
      ['list channels', ['PUBSUB', 'CHANNELS']],
      ['track every key', ['CLIENT', 'TRACKING', 'ON', 'BCAST']],
      ['list clients', ['CLIENT', 'LIST']],
      ['kill clients', ['CLIENT', 'KILL', 'TYPE', 'normal']],
      ['read the configuration', ['CONFIG', 'GET', '*']],
      ['list users', ['ACL', 'LIST']],
      ['change its rules', ['ACL', 'SETUSER', hostile.user, '~*']],
      ['flush the script cache', ['SCRIPT', 'FLUSH']],
      ['kill running scripts', ['SCRIPT', 'KILL']],
      ['load functions', ['FUNCTION', 'FLUSH']],
      ['read server memory stats', ['MEMORY', 'STATS']],
      ['load a module', ['MODULE', 'LIST']],
      ['watch every command', ['MONITOR']],
    ];
    const allowed: string[] = [];
    for (const [what, command] of attempts) {
      const outcome = await attacker.sendCommand(command).then(
        () => 'allowed',
        (error: Error) => error.message,
      );
      if (!NOPERM.test(outcome) && !/not allowed/.test(outcome)) allowed.push(`${what} (${command.join(' ')}): ${outcome}`);
    }
    assert.deepEqual(allowed, [], 'every attempt is refused');

    const escape = await connect(hostile.uri);
    await assert.rejects(escape.sendCommand(['AUTH', 'default', 'anything']), /WRONGPASS/);
    await escape.sendCommand(['RESET']);
    await assert.rejects(escape.sendCommand(['GET', theirs]), /NOAUTH/);

    const spy = await connect(hostile.uri);
    await assert.rejects(
      spy.subscribe(`${victim.prefix}run:cancel`, () => {}),
      NOPERM,
    );
    const spyAll = await connect(hostile.uri);
    await assert.rejects(
      spyAll.pSubscribe('*', () => {}),
      NOPERM,
    );

    // Everything of the victim is as it was, and it heard nothing forged.
    assert.equal(await mine.get(theirs), 'victim data');
    assert.deepEqual({ ...(await mine.hGetAll(`${victim.prefix}hash`)) }, { field: 'value' });
    assert.equal(await mine.xLen(`${victim.prefix}stream`), 1);
    await mine.publish(`${victim.prefix}run:cancel`, 'genuine');
    await eventually(async () => heard.length > 0, 'the genuine message to arrive', 30_000);
    assert.deepEqual(heard, ['genuine']);
  });

  it('provisioning again keeps the running connection and the data', async () => {
    const own = await provisioned();
    const client = await connect(own.uri);
    await client.set(`${own.prefix}kept`, '1');
    await provisioner.provision(own);
    assert.equal(await client.get(`${own.prefix}kept`), '1');
    assert.equal(await (await connect(own.uri)).get(`${own.prefix}kept`), '1');
  });

  it('holds more deployments than a Redis has databases: there is no pool to run out of', async () => {
    const many = await Promise.all(Array.from({ length: 40 }, () => provisioned()));
    assert.equal(new Set(many.map((one) => one.prefix)).size, 40);
    const last = await connect((many.at(-1) as { uri: string }).uri);
    assert.equal(await last.set(`${many.at(-1)?.prefix}ok`, '1'), 'OK');
    await Promise.all(many.map((one) => provisioner.deprovision(one)));
  });

  it("deprovision removes the user and disconnects it, deletes exactly the deployment's keys; again is fine", async () => {
    const doomed = await provisioned();
    const neighbour = await provisioned();
    const client = await connect(doomed.uri);
    for (let i = 0; i < 2500; i++) await client.set(`${doomed.prefix}key:${i}`, 'x');
    await (await connect(neighbour.uri)).set(`${neighbour.prefix}kept`, 'y');
    await admin.set('operator:data', 'z');

    await provisioner.deprovision(doomed);
    assert.equal(await admin.sendCommand(['ACL', 'GETUSER', doomed.user]), null);
    assert.deepEqual(await admin.keys(`${doomed.prefix}*`), []);
    assert.equal(await admin.get(`${neighbour.prefix}kept`), 'y');
    assert.equal(await admin.get('operator:data'), 'z');
    await assert.rejects(client.get(`${doomed.prefix}key:1`));
    await assert.rejects(connectRedis(doomed.uri), /WRONGPASS/);
    await provisioner.deprovision(doomed);
  });

  it('refuses names it did not make, so a bad record can never widen a pattern or a delete', async () => {
    await assert.rejects(provisioner.deprovision({ user: 'berth-x', prefix: '' }), /did not make/);
    await assert.rejects(provisioner.provision({ ...newRedisCredentials(), prefix: 'berth:*' }), /did not make/);
  });

  it('removes a deployment of an earlier version, which had a database number of its own', async () => {
    const id = randomUUID();
    const user = legacyRedisUser(id);
    await admin.sendCommand(['ACL', 'SETUSER', user, 'on', '>legacy', '~*', '&*', '+@all', '-select', '+select|3']);
    await admin.select(15);
    await admin.hSet('berth:deployment-databases', id, '3');
    await admin.select(3);
    await admin.set('legacy-key', 'x');
    await admin.select(0);

    await provisioner.deprovisionLegacy(id);
    assert.equal(await admin.sendCommand(['ACL', 'GETUSER', user]), null);
    await admin.select(3);
    assert.equal(await admin.dbSize(), 0);
    await admin.select(15);
    assert.equal(await admin.hGet('berth:deployment-databases', id), null);
    await admin.select(0);
  });
});

describe('Redis servers Berth refuses or cannot reach', { skip: redisServerMissing() ?? false }, () => {
  it("refuses a Redis whose 'default' user needs no password: any deployment could become it", async () => {
    const open = await startRedis({ openDefaultUser: true });
    try {
      const provisioner = new RedisProvisioner({ adminUrl: open.adminUrl, perWorkspace: 100 });
      const credentials = newRedisCredentials();
      await assert.rejects(provisioner.provision(credentials), (error: unknown) => {
        assert.ok(error instanceof ProvisioningError);
        assert.match(error.message, /lets any client in as its 'default' user without a password/);
        assert.match(error.message, /ACL SETUSER default off/);
        return true;
      });
      const admin = await connectRedis(open.adminUrl);
      assert.equal(await admin.sendCommand(['ACL', 'GETUSER', credentials.user]), null, 'no user was created');
      admin.destroy();
    } finally {
      await open.stop();
    }
  });

  it('a server that is down gives an error naming it, without the password', async () => {
    const port = await freePort();
    const down = new RedisProvisioner({ adminUrl: `redis://admin:very-secret-admin@127.0.0.1:${port}`, perWorkspace: 100, connectTimeoutMs: 2000 });
    await assert.rejects(down.provision(newRedisCredentials()), (error: unknown) => {
      assert.ok(error instanceof ProvisioningError);
      assert.match(
        error.message,
        new RegExp(`^Could not set up the deployment's Redis user: Redis at 127\\.0\\.0\\.1:${port} is not reachable \\((ECONNREFUSED|Connection timeout)\\)`),
      );
      assert.doesNotMatch(error.message, /very-secret-admin/);
      return true;
    });
  });
});
