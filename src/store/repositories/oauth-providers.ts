import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type OAuthProviderRow = Database['oauth_providers'];

/** Columns a PATCH may change; identity, owner and creation time never change. */
export type OAuthProviderChanges = Partial<Omit<OAuthProviderRow, 'id' | 'organization_id' | 'provider_id' | 'created_at'>>;

export async function insertOAuthProvider(db: Executor, row: OAuthProviderRow): Promise<void> {
  await db.insertInto('oauth_providers').values(row).execute();
}

export async function findOAuthProvider(db: Executor, organizationId: string, providerId: string): Promise<OAuthProviderRow | undefined> {
  return db.selectFrom('oauth_providers').selectAll().where('organization_id', '=', organizationId).where('provider_id', '=', providerId).executeTakeFirst();
}

export async function listOAuthProviders(db: Executor, organizationId: string): Promise<OAuthProviderRow[]> {
  return db.selectFrom('oauth_providers').selectAll().where('organization_id', '=', organizationId).orderBy('created_at').orderBy('id').execute();
}

/**
 * Keyed by the row id, not the provider_id: a secret encrypted for one row must never land
 * on a row recreated under the same provider_id meanwhile. Undefined when the row is gone.
 */
export async function updateOAuthProvider(
  db: Executor,
  organizationId: string,
  id: string,
  changes: OAuthProviderChanges,
  /** A compare-and-set: only while the row's `updated_at` is still this (every write moves it on). */
  expectedUpdatedAt?: string,
): Promise<OAuthProviderRow | undefined> {
  let query = db.updateTable('oauth_providers').set(changes).where('organization_id', '=', organizationId).where('id', '=', id);
  if (expectedUpdatedAt !== undefined) query = query.where('updated_at', '=', expectedUpdatedAt);
  return query.returningAll().executeTakeFirst();
}

export async function deleteOAuthProvider(db: Executor, organizationId: string, providerId: string, expectedUpdatedAt?: string): Promise<boolean> {
  let query = db.deleteFrom('oauth_providers').where('organization_id', '=', organizationId).where('provider_id', '=', providerId);
  if (expectedUpdatedAt !== undefined) query = query.where('updated_at', '=', expectedUpdatedAt);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
