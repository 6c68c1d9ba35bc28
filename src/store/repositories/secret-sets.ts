import type { Executor } from '../database.js';
import { inJsonList } from '../json-list.js';
import { preparedQuery } from '../prepared.js';
import type { Database } from '../schema.js';

export type SecretEntryRow = Database['secret_set_entries'];

/** A deployment's stored set with this keyed digest, if there is one. */
export async function findSecretSetByDigest(db: Executor, deploymentId: string, digest: string): Promise<string | undefined> {
  const [row] = await selectSecretSetByDigest(db, deploymentId, digest);
  return row?.id;
}

const selectSecretSetByDigest = preparedQuery((db, deploymentId: string, digest: string) =>
  db.selectFrom('secret_sets').select('id').where('deployment_id', '=', deploymentId).where('digest', '=', digest),
);

export async function insertSecretSet(
  db: Executor,
  set: { id: string; deployment_id: string; digest: string; created_at: string },
  entries: SecretEntryRow[],
): Promise<void> {
  await insertSetRow(db, set);
  if (entries.length > 0) await insertEntryRows(db, entries);
}

const insertSetRow = preparedQuery((db, set: { id: string; deployment_id: string; digest: string; created_at: string }) =>
  db.insertInto('secret_sets').values(set),
);
const insertEntryRows = preparedQuery((db, entries: readonly SecretEntryRow[]) => db.insertInto('secret_set_entries').values(entries));

/** Entries of the given sets, in each set's order. */
export async function secretEntries(db: Executor, setIds: readonly string[]): Promise<SecretEntryRow[]> {
  if (setIds.length === 0) return [];
  return selectEntries(db, JSON.stringify(setIds));
}

// Every first read of a deployment's secrets runs this (a GET, a listing page of up to 25
// sets): one statement for any number of sets, planned once on PostgreSQL (bench/results.md).
const selectEntries = preparedQuery((db, setIds: string) =>
  db
    .selectFrom('secret_set_entries')
    .select(['set_id', 'position', 'name', 'value_encrypted'])
    .where(inJsonList(db, 'secret_set_entries.set_id', setIds))
    .orderBy('set_id')
    .orderBy('position'),
);
