import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type SecretEntryRow = Database['secret_set_entries'];

/** A deployment's stored set with this keyed digest, if there is one. */
export async function findSecretSetByDigest(db: Executor, deploymentId: string, digest: string): Promise<string | undefined> {
  const row = await db.selectFrom('secret_sets').select('id').where('deployment_id', '=', deploymentId).where('digest', '=', digest).executeTakeFirst();
  return row?.id;
}

export async function insertSecretSet(
  db: Executor,
  set: { id: string; deployment_id: string; digest: string; created_at: string },
  entries: SecretEntryRow[],
): Promise<void> {
  await db.insertInto('secret_sets').values(set).execute();
  if (entries.length > 0) await db.insertInto('secret_set_entries').values(entries).execute();
}

/** Entries of the given sets, in each set's order. */
export async function secretEntries(db: Executor, setIds: readonly string[]): Promise<SecretEntryRow[]> {
  if (setIds.length === 0) return [];
  return db.selectFrom('secret_set_entries').selectAll().where('set_id', 'in', setIds).orderBy('set_id').orderBy('position').execute();
}
