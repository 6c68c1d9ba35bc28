import { createHash } from 'node:crypto';
import pg from 'pg';
import { parseServiceUrl, ProvisioningError, serverOf } from './errors.js';
import { newPassword, opaqueName, scramSha256Verifier } from './passwords.js';

/**
 * A PostgreSQL database and login role per deployment, on the server named by
 * BERTH_DEPLOYMENT_POSTGRES_URL, for the agent server's POSTGRES_URI.
 *
 * The admin role needs CREATEROLE and CREATEDB (or superuser). Each deployment gets a role
 * and a database of the same random name (`berth_<24 hex>`), owned by that role. Every
 * role on a server can list every database and role name (pg_database and pg_roles are
 * shared catalogs) and read database comments, so names are random and no comment is
 * written: another deployment learns neither a deployment's name nor its id. CONNECT
 * (and TEMP, CREATE) is revoked from PUBLIC on each database, so only its own role (and
 * the admin) can open it. What PostgreSQL cannot take away from a role is connecting to
 * the server's *other* databases whose CONNECT is still granted to PUBLIC (`postgres`,
 * `template1`, …): docs/security.md says how to close that (pg_hba `samerole`).
 *
 * The names and password are chosen by the caller (newPostgresCredentials) and kept,
 * encrypted, before the role is created, so a call repeated after a crash converges on
 * the same role and database. Calls for one role are serialised across processes by an
 * advisory lock on the admin server.
 *
 * Where the returned URI points: by default the admin URL's host and port. A container on
 * the local runtime's bridge network reaches the machine's loopback only with
 * `--network host`; otherwise pass `containerHost` (e.g. `host.containers.internal`) and
 * make PostgreSQL listen on an address the bridge can reach.
 */

export interface PostgresProvisionerOptions {
  /** BERTH_DEPLOYMENT_POSTGRES_URL. */
  adminUrl: string;
  /** Host the container uses to reach the server, when not the admin URL's. */
  containerHost?: string;
  containerPort?: number;
  connectTimeoutMs?: number;
  /** BERTH_DEPLOYMENT_DATABASES_PER_WORKSPACE: deployments of one workspace that may have one at once. */
  perWorkspace: number;
}

export interface PostgresNames {
  database: string;
  role: string;
}

export interface PostgresCredentials extends PostgresNames {
  password: string;
}

/** Names and a password for a new deployment: random, shared by nothing else. */
export function newPostgresCredentials(): PostgresCredentials {
  const name = opaqueName('berth_');
  return { database: name, role: name, password: newPassword() };
}

/**
 * The names deployments provisioned before names were random still have (`berth_` and the
 * deployment's UUID without dashes). They are not renamed: a database cannot be renamed
 * while the running agent server is connected to it.
 */
export function legacyPostgresNames(deploymentId: string): PostgresNames {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(deploymentId);
  const suffix = uuid ? deploymentId.replace(/-/g, '').toLowerCase() : createHash('sha256').update(deploymentId, 'utf8').digest('hex').slice(0, 32);
  const name = `berth_${suffix}`;
  return { database: name, role: name };
}

export class PostgresProvisioner {
  readonly perWorkspace: number;
  readonly #adminUrl: URL;
  readonly #server: string;
  readonly #containerHost: string | undefined;
  readonly #containerPort: number | undefined;
  readonly #connectTimeoutMs: number;

  constructor(options: PostgresProvisionerOptions) {
    this.#adminUrl = parseServiceUrl(options.adminUrl, 'BERTH_DEPLOYMENT_POSTGRES_URL', ['postgres:', 'postgresql:']);
    this.#server = serverOf(this.#adminUrl, 5432);
    this.#containerHost = options.containerHost;
    this.#containerPort = options.containerPort;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.perWorkspace = options.perWorkspace;
  }

  /** POSTGRES_URI for the container; holds the password, so treat it as a secret. */
  uriFor({ role, password, database }: PostgresCredentials): string {
    const uri = new URL(this.#adminUrl.toString());
    uri.protocol = 'postgres:';
    uri.username = role;
    uri.password = password;
    uri.pathname = `/${database}`;
    if (this.#containerHost) uri.hostname = this.#containerHost;
    if (this.#containerPort) uri.port = String(this.#containerPort);
    // Only transport settings carry over from the admin URL; options such as a search path
    // or an application name were meant for Berth's own connection.
    for (const key of [...uri.searchParams.keys()]) if (!key.startsWith('ssl')) uri.searchParams.delete(key);
    return uri.toString();
  }

  /** The credentials inside a URI of uriFor, read back from what Berth stored. */
  credentialsOf(uri: string): PostgresCredentials {
    const parsed = new URL(uri);
    const role = decodeURIComponent(parsed.username);
    return { role, password: decodeURIComponent(parsed.password), database: decodeURIComponent(parsed.pathname.slice(1)) };
  }

  /** Creates the role and database, or brings them back to the expected state. */
  async provision(credentials: PostgresCredentials): Promise<void> {
    const { database, role, password } = credentials;
    await this.#withLockedAdmin(role, "create the deployment's PostgreSQL database", async (admin) => {
      const verifier = quoteLiteral(scramSha256Verifier(password));
      const roleExists = (await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount === 1;
      const attributes = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS';
      await admin.query(`${roleExists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdent(role)} ${attributes} PASSWORD ${verifier}`);

      // PostgreSQL 15 lets a non-superuser create a database owned by a role, and later
      // terminate that role's sessions, only as a member of it.
      const superuser = (await admin.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user')).rows[0]?.rolsuper;
      if (!superuser) await admin.query(`GRANT ${quoteIdent(role)} TO CURRENT_USER`);

      const databaseExists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1;
      if (!databaseExists) await admin.query(`CREATE DATABASE ${quoteIdent(database)} OWNER ${quoteIdent(role)}`);
      await closeToOthers(admin, database);
    });
  }

  /**
   * Applies today's rules to a database provisioned by an earlier Berth, whose names stay
   * (see legacyPostgresNames): no comment naming the deployment, nothing granted to PUBLIC.
   */
  async harden({ database, role }: PostgresNames): Promise<void> {
    await this.#withLockedAdmin(role, "tighten the deployment's PostgreSQL database", async (admin) => {
      if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1) await closeToOthers(admin, database);
    });
  }

  /** Ends the role's sessions and drops its database and the role; nothing to drop is fine. */
  async deprovision({ database, role }: PostgresNames): Promise<void> {
    await this.#withLockedAdmin(role, "drop the deployment's PostgreSQL database", async (admin) => {
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
      // Sessions the role may hold in other databases would keep DROP ROLE from succeeding.
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()', [role]);
      await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`);
    });
  }

  async #withLockedAdmin(role: string, action: string, work: (admin: pg.Client) => Promise<void>): Promise<void> {
    const admin = new pg.Client({ connectionString: this.#adminUrl.toString(), connectionTimeoutMillis: this.#connectTimeoutMs });
    // A connection lost mid-call is reported by the failing query; without a listener the
    // client's own 'error' event would crash the process.
    admin.on('error', () => {});
    try {
      await admin.connect();
      const lock = advisoryLockKey(role);
      await admin.query('SELECT pg_advisory_lock($1::bigint)', [lock]);
      try {
        await work(admin);
      } finally {
        await admin.query('SELECT pg_advisory_unlock($1::bigint)', [lock]).catch(() => {});
      }
    } catch (error) {
      throw this.#explain(error, action);
    } finally {
      await admin.end().catch(() => {});
    }
  }

  #explain(error: unknown, what: string): ProvisioningError {
    const server = this.#server;
    const code = (error as { code?: string }).code;
    const detail = error instanceof Error ? error.message : String(error);
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ETIMEDOUT' || /timeout/i.test(detail)) {
      return new ProvisioningError(
        'postgres',
        server,
        `Could not ${what}: PostgreSQL at ${server} is not reachable (${code ?? detail}). Check BERTH_DEPLOYMENT_POSTGRES_URL and that the server is running.`,
      );
    }
    if (code === '28P01' || code === '28000') {
      return new ProvisioningError(
        'postgres',
        server,
        `Could not ${what}: PostgreSQL at ${server} refused the credentials of BERTH_DEPLOYMENT_POSTGRES_URL (${detail}).`,
      );
    }
    if (code === '42501') {
      return new ProvisioningError(
        'postgres',
        server,
        `Could not ${what}: PostgreSQL at ${server} denied it (${detail}). The role in BERTH_DEPLOYMENT_POSTGRES_URL needs CREATEROLE and CREATEDB, or superuser.`,
      );
    }
    return new ProvisioningError('postgres', server, `Could not ${what}: PostgreSQL at ${server} answered: ${detail}${code ? ` (${code})` : ''}.`);
  }
}

/**
 * Only the owner (and the admin) may connect, create schemas or temporary tables. A
 * comment would be readable from every database of the server (pg_shdescription), so
 * there is none; earlier Berth versions wrote the deployment's name and id there.
 */
async function closeToOthers(admin: pg.Client, database: string): Promise<void> {
  await admin.query(`REVOKE ALL ON DATABASE ${quoteIdent(database)} FROM PUBLIC`);
  await admin.query(`COMMENT ON DATABASE ${quoteIdent(database)} IS NULL`);
}

/** 64 bits of a hash of the role name: one lock per deployment, the same in every process. */
function advisoryLockKey(role: string): string {
  return createHash('sha256').update(`berth/provision/${role}`, 'utf8').digest().readBigInt64BE(0).toString();
}

const quoteIdent = (name: string) => pg.escapeIdentifier(name);
const quoteLiteral = (value: string) => pg.escapeLiteral(value);
