import { sql } from 'kysely';
import type { Config } from '../config.js';
import { Encryptor } from '../security/encryption.js';
import { KEYED_VALUES, type KeyedValues } from './encrypted-values.js';
import { openForMaintenance } from './maintenance-database.js';
import { prepareRotationKeys, swapKeyFiles } from './key-files.js';

export interface RotationOptions {
  /** BERTH_NEW_ENCRYPTION_KEY, if given. */
  newKey?: string;
  /** PostgreSQL: go on although other sessions are connected (they must not be Berth). */
  allowOtherSessions?: boolean;
  /** What is rotated; every keyed value Berth stores by default. */
  values?: readonly KeyedValues[];
  /** Told as each table is done. */
  progress?: (name: string, rows: number) => void;
}

export interface RotationReport {
  rotated: { name: string; rows: number }[];
  nextSource: 'env' | 'pending' | 'generated';
  /** Set when the key file was swapped: the new key is in use by the next start. */
  keyFile?: string;
  previousKeyFile?: string;
  /** Set when BERTH_ENCRYPTION_KEY holds the key and the new one was generated: the operator puts this file's key there. */
  newKeyFile?: string;
  currentSource: 'env' | 'file';
}

/**
 * Re-encrypts every stored secret with a new key, one transaction per table, alone with
 * the database (see openForMaintenance), then puts the new key in place. Interrupted, it
 * resumes where it stopped when run again: the new key waits in the pending key file.
 */
export async function rotateEncryptionKey(config: Config, options: RotationOptions = {}): Promise<RotationReport> {
  // The lock first: nothing (not even the pending key file) changes while a server runs.
  const maintenance = await openForMaintenance(config.database, { allowOtherSessions: options.allowOtherSessions });
  try {
    const material = prepareRotationKeys(config.dataDir, { current: config.encryptionKey, next: options.newKey });
    const keys = { current: new Encryptor(material.current), next: new Encryptor(material.next) };
    const rotated: RotationReport['rotated'] = [];
    for (const values of options.values ?? KEYED_VALUES) {
      const rows = await maintenance.db.transaction().execute(async (trx) => {
        // SQLite is locked whole already; on PostgreSQL, writers of this table wait.
        if (maintenance.kind === 'postgres') await sql`lock table ${sql.table(values.table)} in exclusive mode`.execute(trx);
        return values.rotate(trx, keys);
      });
      rotated.push({ name: values.name, rows });
      options.progress?.(values.name, rows);
    }
    const swapped = swapKeyFiles(material);
    return {
      rotated,
      nextSource: material.nextSource,
      currentSource: material.currentSource,
      keyFile: swapped.keyFile,
      previousKeyFile: swapped.previous,
      newKeyFile: swapped.newKeyFile,
    };
  } finally {
    await maintenance.close();
  }
}
