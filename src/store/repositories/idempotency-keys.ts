import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type IdempotencyKeyRow = Database['idempotency_keys'];

/** Claims a key for a first request; false when the scope already holds the key (expired or not). */
export async function claimIdempotencyKey(db: Executor, row: IdempotencyKeyRow): Promise<boolean> {
  const inserted = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((conflict) => conflict.columns(['scope', 'key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function findIdempotencyKey(db: Executor, scope: string, key: string): Promise<IdempotencyKeyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where('scope', '=', scope).where('key', '=', key).executeTakeFirst();
}

/** Compare-and-set on the lock of an unanswered key: true for the one request that takes it over. */
export async function takeOverIdempotencyKey(db: Executor, id: string, lockedUntil: string, newLockedUntil: string): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: newLockedUntil })
    .where('id', '=', id)
    .where('locked_until', '=', lockedUntil)
    .where('response_encrypted', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Stores the answer of the request that holds the key; false when it no longer does. */
export async function answerIdempotencyKey(db: Executor, id: string, responseEncrypted: string): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ response_encrypted: responseEncrypted })
    .where('id', '=', id)
    .where('response_encrypted', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Lets go of an unanswered key (its request failed in a way a retry may not), so that a retry runs again. */
export async function releaseIdempotencyKey(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('id', '=', id).where('response_encrypted', 'is', null).execute();
}

/** Removes one expired row, if it is still the one that was read. */
export async function removeExpiredIdempotencyKey(db: Executor, id: string, now: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('id', '=', id).where('expires_at', '<=', now).execute();
}

/** Removes every expired row; the count removed. */
export async function sweepIdempotencyKeys(db: Executor, now: string): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
