import type { Executor } from '../database.js';
import type { Database } from '../schema.js';
import { type ApiKeyRow, decodeApiKey } from './tenancy.js';

export type SessionRow = Database['sessions'];

export async function insertSession(db: Executor, row: SessionRow): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

/**
 * The session with this secret digest and the key it was opened with, while both stand:
 * not revoked, not expired at `now`, and the key not revoked (revoking deletes its row).
 */
export async function findLiveSession(db: Executor, secretHash: string, now: string): Promise<{ session: SessionRow; key: ApiKeyRow } | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('api_keys', 'api_keys.id', 'sessions.key_id')
    .select([
      'sessions.id as session_id',
      'sessions.secret_hash',
      'sessions.key_id',
      'sessions.organization_id as session_organization_id',
      'sessions.csrf_token',
      'sessions.created_at as session_created_at',
      'sessions.expires_at',
      'sessions.revoked_at',
      'api_keys.id',
      'api_keys.organization_id',
      'api_keys.workspace_id',
      'api_keys.name',
      'api_keys.role',
      'api_keys.key_hash',
      'api_keys.key_hint',
      'api_keys.created_at',
      'api_keys.listener_id',
      'api_keys.deployment_ids',
      'api_keys.runner_labels',
    ])
    .where('sessions.secret_hash', '=', secretHash)
    .where('sessions.revoked_at', 'is', null)
    .where('sessions.expires_at', '>', now)
    .executeTakeFirst();
  if (!row) return undefined;
  const { session_id, secret_hash, key_id, session_organization_id, csrf_token, session_created_at, expires_at, revoked_at, ...key } = row;
  return {
    session: {
      id: session_id,
      secret_hash,
      key_id,
      organization_id: session_organization_id,
      csrf_token,
      created_at: session_created_at,
      expires_at,
      revoked_at,
    },
    key: decodeApiKey(key),
  };
}

/** Marks a live session revoked; answers whether one was. */
export async function revokeSession(db: Executor, id: string, now: string): Promise<boolean> {
  const result = await db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Removes sessions that ended (expired or revoked) before `before`; answers how many went. */
export async function deleteSessionsEndedBefore(db: Executor, before: string): Promise<number> {
  const result = await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<', before), eb('revoked_at', '<', before)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
