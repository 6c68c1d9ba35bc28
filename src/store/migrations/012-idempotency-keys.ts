import type { Kysely, Migration } from 'kysely';

/**
 * Idempotency keys of POST requests (http/idempotency.ts): one row per scope (the workspace,
 * or the organization for organization-wide routes) and key. `response_encrypted` is null
 * while the first request runs; `locked_until` lets a later request take over a key whose
 * first request died with its process. Fingerprint and answer are encrypted: answers can
 * hold a key shown once (API keys, listener keys), and a digest of a body could confirm a
 * guessed secret value.
 */
export const idempotencyKeys: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('fingerprint_encrypted', 'text', (c) => c.notNull())
      .addColumn('response_encrypted', 'text')
      .addColumn('locked_until', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('idempotency_keys_scope_key', ['scope', 'key'])
      .execute();
    await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').column('expires_at').execute();
  },
};
