import type { createClient } from 'redis';
import { parseServiceUrl, ProvisioningError, serverOf } from './errors.js';
import { removeLegacyRedis } from './redis-legacy.js';
import { newPassword, opaqueName, redisPasswordHash } from './passwords.js';

/**
 * A key space of its own per deployment on the Redis named by BERTH_DEPLOYMENT_REDIS_URL:
 * an ACL user whose keys and pub/sub channels must start with a random prefix, handed to
 * the agent server as REDIS_URI (with the user and password) and REDIS_KEY_PREFIX.
 *
 * Every deployment shares one logical database (the admin URL's, 0 by default), so there
 * is no pool to run out of: a Redis holds as many deployments as it has memory for, and
 * Berth caps how many each workspace may have (BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE).
 *
 * What the user may do (ACL rules in `aclRules`): every command that names its keys or
 * channels, checked against its prefix by Redis itself, inside Lua scripts as well; none
 * that reaches keys, channels or state of others without naming them: KEYS, SCAN,
 * RANDOMKEY, DBSIZE, FLUSHDB/FLUSHALL, SORT (BY/GET patterns), MOVE/COPY/SWAPDB/SELECT to
 * another database, PUBSUB listings, CLIENT LIST/KILL/TRACKING, MONITOR, SCRIPT
 * FLUSH/KILL, FUNCTION, CONFIG, ACL, DEBUG, MODULE and the rest of @dangerous. INFO stays
 * allowed (ioredis runs it on connect): it shows server-wide counters, never key,
 * channel or client names.
 *
 * How the agent servers use the prefix: the LangGraph API server (Python) reads
 * REDIS_KEY_PREFIX ("allows multiple LangGraph Server instances to share the same Redis
 * instance", langgraph-api 0.1.9+). A server that leaves some key or channel unprefixed
 * gets NOPERM for it from Redis (it fails; it never reaches another deployment's data);
 * such a deployment can bring its own Redis with a REDIS_URI_CUSTOM secret. The
 * LangGraph.js server published on npm (@langchain/langgraph-api 1.x) keeps its queue in
 * memory and does not use Redis.
 *
 * Isolation rests on the server's `default` user being unusable without a password:
 * otherwise any client could leave its own user with AUTH default or RESET. Provisioning
 * refuses such a server and says so.
 */

export interface RedisProvisionerOptions {
  /** BERTH_DEPLOYMENT_REDIS_URL (`redis://` or `rediss://`), for a user allowed ACL, SCAN and UNLINK. */
  adminUrl: string;
  containerHost?: string;
  containerPort?: number;
  connectTimeoutMs?: number;
  /** BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE: deployments of one workspace that may have one at once. */
  perWorkspace: number;
}

export interface RedisNames {
  user: string;
  /** Every key and channel of the deployment starts with it; ends with `:`. */
  prefix: string;
}

export interface RedisCredentials extends RedisNames {
  password: string;
}

/** A user name, a key prefix and a password for a new deployment: random, shared by nothing else. */
export function newRedisCredentials(): RedisCredentials {
  return { user: opaqueName('berth-'), prefix: `${opaqueName('berth:')}:`, password: newPassword() };
}

/**
 * Only names Berth makes: a prefix with glob characters (or none) would widen both the
 * ACL pattern and the keys deleted with the deployment.
 */
const SAFE_PREFIX = /^berth:[0-9a-f]{24}:$/;
const SAFE_USER = /^berth-[0-9a-f]{24}$/;

/** Commands whose ACL names differ between Redis versions; rules name only those the server knows. */
const VERSIONED = ['function', 'fcall', 'fcall_ro', 'client|setinfo', 'client|no-touch'];

type AdminClient = ReturnType<typeof createClient>;

export class RedisProvisioner {
  readonly perWorkspace: number;
  readonly #adminUrl: URL;
  readonly #server: string;
  readonly #database: number;
  readonly #options: RedisProvisionerOptions;

  constructor(options: RedisProvisionerOptions) {
    this.#adminUrl = parseServiceUrl(options.adminUrl, 'BERTH_DEPLOYMENT_REDIS_URL', ['redis:', 'rediss:']);
    this.#server = serverOf(this.#adminUrl, 6379);
    this.#database = Number(this.#adminUrl.pathname.slice(1) || 0);
    if (!Number.isInteger(this.#database) || this.#database < 0) throw new Error('BERTH_DEPLOYMENT_REDIS_URL names no valid database number');
    this.#options = options;
    this.perWorkspace = options.perWorkspace;
  }

  /** REDIS_URI for the container: the user and password in it; treat it as a secret. */
  uriFor({ user, password }: RedisCredentials): string {
    const uri = new URL(this.#adminUrl.toString());
    uri.username = user;
    uri.password = password;
    uri.pathname = this.#database === 0 ? '' : `/${this.#database}`;
    uri.search = '';
    if (this.#options.containerHost) uri.hostname = this.#options.containerHost;
    if (this.#options.containerPort) uri.port = String(this.#options.containerPort);
    return uri.toString();
  }

  /** The password inside a URI of uriFor, read back from what Berth stored. */
  passwordOf(uri: string): string {
    return decodeURIComponent(new URL(uri).password);
  }

  /** Creates the deployment's user, or sets it back to exactly the expected rules. */
  async provision(credentials: RedisCredentials): Promise<void> {
    checkNames(credentials);
    await this.#withAdmin("set up the deployment's Redis user", async (admin) => {
      await this.#refuseOpenDefaultUser(admin);
      const known = await knownCommands(admin, VERSIONED);
      // `reset` first: one command that fully states the rules, so any number of calls agree.
      await admin.sendCommand(['ACL', 'SETUSER', credentials.user, ...aclRules(credentials, this.#database, known)]);
    });
  }

  /** Removes the user (which disconnects its clients), then every key under its prefix. */
  async deprovision(names: RedisNames): Promise<void> {
    checkNames(names);
    await this.#withAdmin("remove the deployment's Redis user and keys", async (admin) => {
      await admin.sendCommand(['ACL', 'DELUSER', names.user]);
      let cursor = '0';
      do {
        const [next, keys] = (await admin.sendCommand(['SCAN', cursor, 'MATCH', `${names.prefix}*`, 'COUNT', '1000'])) as unknown as [string, string[]];
        if (keys.length > 0) await admin.sendCommand(['UNLINK', ...keys]);
        cursor = next;
      } while (cursor !== '0');
    });
  }

  /** A deployment of an earlier Berth had a database number of its own; this removes it. */
  async deprovisionLegacy(deploymentId: string): Promise<void> {
    await this.#withAdmin("remove the deployment's Redis database", (admin) => removeLegacyRedis(admin, deploymentId));
  }

  async #refuseOpenDefaultUser(admin: AdminClient): Promise<void> {
    const reply = (await admin.sendCommand(['ACL', 'GETUSER', 'default'])) as unknown as unknown[] | null;
    const flagsAt = reply ? reply.indexOf('flags') : -1;
    const flags = flagsAt >= 0 ? (reply?.[flagsAt + 1] as string[]) : [];
    if (flags.includes('on') && flags.includes('nopass')) {
      throw new ProvisioningError(
        'redis',
        this.#server,
        `Could not set up the deployment's Redis user: the Redis at ${this.#server} lets any client in as its 'default' user without a password, ` +
          `so a deployment could leave its own user (AUTH default, RESET) and reach every key. Turn that user off ('ACL SETUSER default off') ` +
          `or give it a password, and give Berth an admin user of its own in BERTH_DEPLOYMENT_REDIS_URL.`,
      );
    }
  }

  async #withAdmin<T>(what: string, work: (admin: AdminClient) => Promise<T>): Promise<T> {
    const timeout = this.#options.connectTimeoutMs ?? 10_000;
    let admin: AdminClient | undefined;
    try {
      // Imported here, not at the top: the client is some 600 modules that only provisioning needs, and
      // every start of Berth would load them. Inside the try, so a failure to load says what it was doing.
      const { createClient } = await import('redis');
      // No reconnecting: a provisioning call should fail and say why, not wait for the server.
      admin = createClient({ url: this.#adminUrl.toString(), socket: { connectTimeout: timeout, reconnectStrategy: false } });
      admin.on('error', () => {});
      await admin.connect();
      return await work(admin);
    } catch (error) {
      throw this.#explain(error, what);
    } finally {
      // After a failed connect the client is already closed, and destroy() would throw.
      if (admin?.isOpen) admin.destroy();
    }
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
        `Could not ${what}: Redis at ${server} denied it (${detail}). The user in BERTH_DEPLOYMENT_REDIS_URL needs ACL, COMMAND, SCAN and UNLINK.`,
      );
    }
    return new ProvisioningError('redis', server, `Could not ${what}: Redis at ${server} answered: ${detail}.`);
  }
}

/**
 * The user's whole ACL: its password, its key and channel patterns, and its commands.
 * `-@dangerous` takes away the admin commands and those that reach every key (KEYS,
 * FLUSHALL, SORT with BY/GET, MIGRATE, …); the rest are commands outside that category
 * that still see or change what other users have.
 */
function aclRules({ password, prefix }: RedisCredentials, database: number, known: ReadonlySet<string>): string[] {
  const versioned = (rule: string) => known.has(rule.slice(1));
  return [
    'reset',
    'on',
    `#${redisPasswordHash(password)}`,
    'resetkeys',
    `~${prefix}*`,
    'resetchannels',
    `&${prefix}*`,
    '+@all',
    '-@dangerous',
    // Keys of others, listed or counted without naming them.
    '-scan',
    '-randomkey',
    '-dbsize',
    // Other databases.
    '-select',
    '-move',
    '-copy',
    '-swapdb',
    `+select|${database}`,
    // Channel names of others; other connections.
    '-pubsub',
    '-client',
    '+client|setname',
    '+client|getname',
    '+client|id',
    '+client|info',
    '+client|reply',
    ...['+client|setinfo', '+client|no-touch'].filter(versioned),
    // The server-wide script cache and function library, and other users' running scripts.
    '-script|flush',
    '-script|kill',
    ...['-function', '-fcall', '-fcall_ro'].filter(versioned),
    '-memory',
    '+memory|usage',
    // Clients (ioredis) run INFO on every connect; it holds server-wide counters only.
    '+info',
  ];
}

/** Which of the commands (`name` or `name|subcommand`) this server has. */
async function knownCommands(admin: AdminClient, names: readonly string[]): Promise<Set<string>> {
  const reply = (await admin.sendCommand(['COMMAND', 'INFO', ...names])) as unknown as unknown[];
  return new Set(names.filter((_, i) => reply[i] !== null && reply[i] !== undefined));
}

function checkNames({ user, prefix }: RedisNames): void {
  if (!SAFE_USER.test(user) || !SAFE_PREFIX.test(prefix)) throw new Error('refusing a Redis user or key prefix Berth did not make');
}
