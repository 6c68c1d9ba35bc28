import type { Kysely, Migration } from 'kysely';

/**
 * Dashboard sign-in sessions (docs/architecture.md, "Sessions"). The cookie carries a random
 * secret; only its SHA-256 digest is stored, so a copy of the database opens no session. No
 * foreign key to api_keys: revoking a key deletes its row, and a session whose key is gone
 * authenticates no one (the lookup joins the key).
 */
export const sessions: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('organization_id', 'text', (c) => c.notNull())
      .addColumn('csrf_token', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('revoked_at', 'text')
      .execute();
    await db.schema.createIndex('sessions_expiry').on('sessions').column('expires_at').execute();
  },
};
