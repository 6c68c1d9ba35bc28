import type { Kysely, Migration } from 'kysely';

/**
 * Why Berth made a change on its own (a step past its timeout, a subscription failing for
 * 24 h, a push to build): rows written for a key's request leave it null, since the key
 * holder's reason is theirs. Text Berth composes, never a value a user stored.
 */
export const auditActorReason: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('audit_log').addColumn('actor_reason', 'text').execute();
  },
};
