import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type { Config } from '../config.js';
import { OperationError } from './errors.js';

export interface BackupResult {
  file: string;
  bytes: number;
}

/** What to run instead on PostgreSQL; the URL stays in the environment, never on a command line we print. */
export const PG_DUMP_COMMAND = 'pg_dump --format=custom --file=berth.dump "$DATABASE_URL"';

/**
 * A consistent copy of the SQLite database in one file, safe while the server runs.
 * SQLite's online backup copies every page in a single step, inside one read transaction:
 * in WAL mode that sees one committed state and does not hold up the server's writers.
 * (Copied in several steps, a write by another process between two would restart the
 * copy, which under steady writes might never finish.) The copy is written beside the
 * destination, checked, switched out of WAL mode so it needs no side files, and only then
 * renamed into place: an interrupted backup never leaves a file that looks complete.
 */
export async function backupDatabase(database: Config['database'], destination: string, options: { overwrite?: boolean } = {}): Promise<BackupResult> {
  if (database.kind === 'postgres') {
    throw new OperationError(
      `berth backup copies the embedded SQLite database; this Berth uses PostgreSQL. Back it up with pg_dump, e.g.\n  ${PG_DUMP_COMMAND}`,
    );
  }
  const target = path.resolve(destination);
  if (path.resolve(database.file) === target) throw new OperationError('The backup file cannot be the database itself.');
  if (!fs.existsSync(database.file)) throw new OperationError(`There is no Berth database at ${database.file}. Check BERTH_DATA_DIR or DATABASE_URL.`);
  if (!options.overwrite && fs.existsSync(target)) throw new OperationError(`${target} exists already; choose another file or pass --force to replace it.`);
  if (!fs.existsSync(path.dirname(target))) throw new OperationError(`The directory ${path.dirname(target)} does not exist.`);

  const partial = path.join(path.dirname(target), `.${path.basename(target)}.partial-${randomBytes(4).toString('hex')}`);
  const source = new SQLite(database.file, { fileMustExist: true, timeout: 5000 });
  try {
    await source.backup(partial, { progress: () => ALL_REMAINING_PAGES });
    const copy = new SQLite(partial, { fileMustExist: true });
    try {
      const check = copy.pragma('quick_check', { simple: true });
      if (check !== 'ok')
        throw new OperationError(`The copy failed SQLite's check (${String(check)}); the database itself may be damaged: run PRAGMA integrity_check on it.`);
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    // It holds API key digests and encrypted secrets: readable by its owner only.
    fs.chmodSync(partial, 0o600);
    fsyncFile(partial);
    fs.renameSync(partial, target);
    fsyncFile(path.dirname(target));
    return { file: target, bytes: fs.statSync(target).size };
  } finally {
    source.close();
    fs.rmSync(partial, { force: true });
  }
}

/** better-sqlite3 takes this as the page count of each following step (its maximum). */
const ALL_REMAINING_PAGES = 0x7fffffff;

function fsyncFile(file: string): void {
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
