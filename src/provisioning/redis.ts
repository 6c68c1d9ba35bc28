import { createHash } from 'node:crypto';
import { createClient } from 'redis';
import { parseServiceUrl, ProvisioningError, serverOf } from './errors.js';
import { deploymentPassword, redisPasswordHash } from './passwords.js';

/**
 * A space of its own per deployment on the Redis named by BERTH_DEPLOYMENT_REDIS_URL, for
 * the agent server's REDIS_URI: a logical database number plus an ACL user that may only
 * select that database.
 *
 * Why a database number and not a key prefix. The agent servers use Redis as the broker
 * of background runs: run locks and abort flags (`lock:run:<id>`, `abort:run:<id>`), queues
 * of streamed output (`fifo-queue:<id>`, `rsm-queue:<id>`, lists and streams read with
 * blocking BRPOP/XREAD) and a `run:cancel` pub/sub channel. The LangGraph.js server
 * (@langchain/langgraph-api, the one Berth can build and run here) uses those names as they
 * are, with no prefix setting; the Python server has REDIS_KEY_PREFIX but it is optional
 * and unknown for channels. An ACL restricted to `~berth:<id>:*` would therefore break the
 * server. What LangChain documents for several self-hosted deployments sharing one Redis
 * is a database number each (`redis://host:port/1`, `/2`), so that is the unit here.
 *
 * Isolation that gives, and its limits (Redis has no per-database ACL):
 * - the user may SELECT only its own database (`-select +select|<n>`) and cannot run
 *   admin or dangerous commands (CONFIG, FLUSHALL, KEYS, SWAPDB, MIGRATE, …), nor MOVE or
 *   COPY keys to another database, nor touch the server-wide FUNCTION library or script
 *   cache; INFO stays allowed because clients (ioredis) run it on every connect;
 * - database 0, where every connection starts, is reachable by every deployment user, so
 *   Berth never hands it out: keep nothing in database 0 of this Redis;
 * - pub/sub channels are server-wide (`&*`: the servers' channel names are fixed), so a
 *   deployment can see another's `run:cancel` messages (run ids, not data).
 * For isolation against hostile code, give each deployment a Redis server of its own.
 *
 * Allocation: Berth records `deployment id → database` in a hash in a database it keeps
 * for itself (default: the last one, which no deployment user can select), and allocates
 * with one Lua script, so concurrent calls in any number of processes never hand out a
 * number twice. A database that holds keys Berth did not put there is never allocated.
 * Up to `databases - 2` deployments fit (14 with Redis' default of 16).
 *
 * The returned URI names the admin URL's host unless `containerHost` says otherwise (see
 * postgres.ts: a bridged container does not reach the machine's loopback).
 */

export interface RedisProvisionerOptions {
  /** BERTH_DEPLOYMENT_REDIS_URL (`redis://` or `rediss://`), for a user allowed ACL and CONFIG GET. */
  adminUrl: string;
  /** Key the user passwords are derived from; at least 32 bytes. */
  passwordKey: Buffer;
  containerHost?: string;
  containerPort?: number;
  /** The server's `databases` setting, when the admin user may not read it. */
  databases?: number;
  /** Where Berth keeps its allocation records; defaults to the last database. */
  recordsDatabase?: number;
  connectTimeoutMs?: number;
}

export interface ProvisionedRedis {
  /** REDIS_URI for the container; holds the password, so treat it as a secret. */
  uri: string;
  database: number;
  user: string;
}

const RECORDS_KEY = 'berth:deployment-databases';

/**
 * KEYS[1] records hash; ARGV: deployment id, number of databases, the records database.
 * Returns the deployment's database, allocating the lowest free, empty one; -1 when none.
 */
const ALLOCATE = `
local existing = redis.call('HGET', KEYS[1], ARGV[1])
if existing then return tonumber(existing) end
local databases, records = tonumber(ARGV[2]), tonumber(ARGV[3])
local taken = {}
for _, n in ipairs(redis.call('HVALS', KEYS[1])) do taken[tonumber(n)] = true end
for n = 1, databases - 1 do
  if n ~= records and not taken[n] then
    redis.call('SELECT', n)
    local empty = redis.call('DBSIZE') == 0
    redis.call('SELECT', records)
    if empty then
      redis.call('HSET', KEYS[1], ARGV[1], n)
      return n
    end
  end
end
return -1
`;

type AdminClient = ReturnType<typeof createClient>;

/** The ACL user of a deployment; the same for every call. */
export function redisUserFor(deploymentId: string): string {
  const safe = /^[A-Za-z0-9_-]{1,64}$/.test(deploymentId) ? deploymentId : createHash('sha256').update(deploymentId, 'utf8').digest('hex').slice(0, 32);
  return `berth-${safe}`;
}

export class RedisProvisioner {
  readonly #adminUrl: URL;
  readonly #server: string;
  readonly #options: RedisProvisionerOptions;

  constructor(options: RedisProvisionerOptions) {
    this.#adminUrl = parseServiceUrl(options.adminUrl, 'BERTH_DEPLOYMENT_REDIS_URL', ['redis:', 'rediss:']);
    this.#server = serverOf(this.#adminUrl, 6379);
    this.#options = options;
  }

  /** Allocates the deployment's database (or finds it) and sets its user to the expected rules. */
  async provision(deploymentId: string): Promise<ProvisionedRedis> {
    const user = redisUserFor(deploymentId);
    const password = deploymentPassword(this.#options.passwordKey, 'redis', deploymentId);
    const database = await this.#withAdmin(`set up Redis for deployment ${deploymentId}`, async (admin, { databases, records }) => {
      const allocated = Number(await admin.eval(ALLOCATE, { keys: [RECORDS_KEY], arguments: [deploymentId, String(databases), String(records)] }));
      if (allocated < 0) {
        throw new ProvisioningError(
          'redis',
          this.#server,
          `Could not set up Redis for deployment ${deploymentId}: every database of the Redis at ${this.#server} is taken ` +
            `(by other deployments or by keys Berth did not write). Raise 'databases' in its configuration or use another Redis.`,
        );
      }
      // `reset` first: one command that fully states the rules, so any number of calls agree.
      await admin.sendCommand([
        'ACL',
        'SETUSER',
        user,
        'reset',
        'on',
        `#${redisPasswordHash(password)}`,
        '~*',
        '&*',
        '+@all',
        '-@dangerous',
        '+info',
        '-move',
        '-copy',
        '-function',
        '-script|flush',
        '-select',
        `+select|${allocated}`,
      ]);
      return allocated;
    });
    return { uri: this.#containerUri(user, password, database), database, user };
  }

  /** Removes the user (which disconnects its clients), deletes the database's keys, frees the number. */
  async deprovision(deploymentId: string): Promise<void> {
    const user = redisUserFor(deploymentId);
    await this.#withAdmin(`remove the Redis of deployment ${deploymentId}`, async (admin, { records }) => {
      await admin.sendCommand(['ACL', 'DELUSER', user]);
      const database = await admin.hGet(RECORDS_KEY, deploymentId);
      if (database === null || database === undefined) return;
      await admin.select(Number(database));
      await admin.flushDb();
      await admin.select(records);
      await admin.hDel(RECORDS_KEY, deploymentId);
    });
  }

  async #withAdmin<T>(what: string, work: (admin: AdminClient, layout: { databases: number; records: number }) => Promise<T>): Promise<T> {
    const timeout = this.#options.connectTimeoutMs ?? 10_000;
    // No reconnecting: a provisioning call should fail and say why, not wait for the server.
    const admin = createClient({ url: this.#adminUrl.toString(), socket: { connectTimeout: timeout, reconnectStrategy: false } });
    admin.on('error', () => {});
    try {
      await admin.connect();
      const databases = this.#options.databases ?? Number((await admin.configGet('databases')).databases);
      if (!Number.isInteger(databases) || databases < 3) {
        throw new ProvisioningError(
          'redis',
          this.#server,
          `Could not ${what}: the Redis at ${this.#server} has ${databases} databases; Berth needs at least 3.`,
        );
      }
      const records = this.#options.recordsDatabase ?? databases - 1;
      if (!Number.isInteger(records) || records < 1 || records >= databases) {
        // Database 0 is reachable by every deployment user: records there could be rewritten.
        throw new ProvisioningError('redis', this.#server, `Could not ${what}: the records database must be between 1 and ${databases - 1}.`);
      }
      await admin.select(records);
      return await work(admin, { databases, records });
    } catch (error) {
      throw this.#explain(error, what);
    } finally {
      // After a failed connect the client is already closed, and destroy() would throw.
      if (admin.isOpen) admin.destroy();
    }
  }

  #containerUri(user: string, password: string, database: number): string {
    const uri = new URL(this.#adminUrl.toString());
    uri.username = user;
    uri.password = password;
    uri.pathname = `/${database}`;
    uri.search = '';
    if (this.#options.containerHost) uri.hostname = this.#options.containerHost;
    if (this.#options.containerPort) uri.port = String(this.#options.containerPort);
    return uri.toString();
  }

  #explain(error: unknown, what: string): ProvisioningError {
    if (error instanceof ProvisioningError) return error;
    const server = this.#server;
    const code = (error as { code?: string }).code;
    const detail = error instanceof Error ? error.message : String(error);
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ETIMEDOUT' || /timeout/i.test(detail)) {
      return new ProvisioningError(
        'redis',
        server,
        `Could not ${what}: Redis at ${server} is not reachable (${code ?? detail}). Check BERTH_DEPLOYMENT_REDIS_URL and that the server is running.`,
      );
    }
    if (/^(WRONGPASS|NOAUTH)/.test(detail)) {
      return new ProvisioningError('redis', server, `Could not ${what}: Redis at ${server} refused the credentials of BERTH_DEPLOYMENT_REDIS_URL (${detail}).`);
    }
    if (/^NOPERM/.test(detail)) {
      return new ProvisioningError(
        'redis',
        server,
        `Could not ${what}: Redis at ${server} denied it (${detail}). The user in BERTH_DEPLOYMENT_REDIS_URL needs ACL, CONFIG GET, EVAL, SELECT and FLUSHDB.`,
      );
    }
    return new ProvisioningError('redis', server, `Could not ${what}: Redis at ${server} answered: ${detail}.`);
  }
}
