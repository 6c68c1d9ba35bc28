import fs from 'node:fs';
import SQLite from 'better-sqlite3';
import { Kysely, sql, SqliteDialect } from 'kysely';
import type { Config } from '../config.js';
import { type Db, openDatabase } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { OperationError } from './errors.js';

export interface MaintenanceDatabase {
  db: Db;
  kind: Config['database']['kind'];
  close(): Promise<void>;
}

/**
 * The database for a command that must be alone with it (re-encrypting every secret).
 * SQLite: an exclusive lock, taken at once and held until close, which fails while any
 * other process (a running Berth) has the database open, and keeps a Berth from starting
 * meanwhile. PostgreSQL: refused while other sessions are connected to the database,
 * unless the caller knows they are not Berth processes.
 */
export async function openForMaintenance(database: Config['database'], options: { allowOtherSessions?: boolean } = {}): Promise<MaintenanceDatabase> {
  if (database.kind === 'sqlite') return openSqliteExclusively(database.file);
  const db = openDatabase(database);
  try {
    await assertAloneOnPostgres(db, options.allowOtherSessions ?? false);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return { db, kind: 'postgres', close: () => db.destroy() };
}

function openSqliteExclusively(file: string): MaintenanceDatabase {
  if (!fs.existsSync(file)) throw new OperationError(`There is no Berth database at ${file}. Check BERTH_DATA_DIR or DATABASE_URL.`);
  const sqlite = new SQLite(file, { fileMustExist: true, timeout: 1000 });
  try {
    sqlite.pragma('foreign_keys = ON');
    // In exclusive locking mode the lock taken by the first write transaction is kept
    // until the connection closes; in WAL mode, taking it fails while another connection
    // has the database open, even an idle one.
    sqlite.pragma('locking_mode = EXCLUSIVE');
    sqlite.exec('BEGIN EXCLUSIVE');
    sqlite.exec('COMMIT');
  } catch (error) {
    sqlite.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') {
      throw new OperationError(`Another process has ${file} open: stop the Berth server (and any \`berth engine\`) using it, then run this again.`);
    }
    throw error;
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, kind: 'sqlite', close: () => db.destroy() };
}

async function assertAloneOnPostgres(db: Db, allowOtherSessions: boolean): Promise<void> {
  const { rows } = await sql<{ application_name: string; client_addr: string | null }>`
    select application_name, host(client_addr) as client_addr from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`.execute(db);
  if (rows.length === 0 || allowOtherSessions) return;
  const who = [...new Set(rows.map((row) => `${row.application_name || 'unnamed'}@${row.client_addr ?? 'local socket'}`))].slice(0, 5).join(', ');
  throw new OperationError(
    `${rows.length} other session(s) are connected to this database (${who}). Stop every Berth server and engine first: ` +
      'one still running with the old key would write secrets no process can read afterwards. If these sessions are not Berth, pass --allow-other-sessions.',
  );
}
