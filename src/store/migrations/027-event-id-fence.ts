import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/**
 * The namespace of the fence locks (the first key of `pg_advisory_xact_lock_shared(int, int)`
 * plus the high bits of the bound): the two-key form, which Berth uses nowhere else, so no
 * other advisory lock is read as a writer in flight. Shared with the reader
 * (repositories/events.ts).
 */
export const EVENT_FENCE_NAMESPACE = 1_111_839_316;

/**
 * Event ids on PostgreSQL come from a sequence, and transactions commit in any order: a
 * reader that walks ids could pass an id whose transaction commits later. Each transaction
 * that writes events now says, before it draws its first id, that it may still commit ids
 * above the sequence's value at that moment: a shared advisory lock held until it ends,
 * whose keys encode that value (docs/architecture.md, "Event ids without gaps"). The column
 * default does it, so every writer is fenced, whatever its code; the first id of a
 * transaction takes the lock, the others skip it (a transaction-local setting), so a
 * transaction holds one such lock however many events it writes.
 *
 * An identity column cannot take another default, so the column becomes a plain one over
 * a sequence of its own that goes on where the identity's stopped (a deleted event's id is
 * never reused). SQLite has one writer at a time: its ids commit in order already.
 */
export const eventIdFence: Migration = {
  async up(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof SqliteAdapter) return;
    const namespace = sql.lit(EVENT_FENCE_NAMESPACE);
    await sql`
      DO $$
      DECLARE
        last bigint;
        called boolean;
      BEGIN
        SELECT last_value, is_called INTO last, called FROM deployment_events_id_seq;
        ALTER TABLE deployment_events ALTER COLUMN id DROP IDENTITY;
        CREATE SEQUENCE deployment_events_id_seq OWNED BY deployment_events.id;
        PERFORM setval('deployment_events_id_seq', last, called);
      END $$`.execute(db);
    await sql`
      CREATE FUNCTION berth_next_event_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        bound bigint;
      BEGIN
        IF current_setting('berth.event_fence', true) IS DISTINCT FROM 'on' THEN
          -- Every id this transaction draws from now on is above bound.
          SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO bound FROM deployment_events_id_seq;
          PERFORM pg_advisory_xact_lock_shared((${namespace} + (bound >> 31))::int, (bound & 2147483647)::int);
          PERFORM set_config('berth.event_fence', 'on', true);
        END IF;
        RETURN nextval('deployment_events_id_seq');
      END $$`.execute(db);
    await sql`ALTER TABLE deployment_events ALTER COLUMN id SET DEFAULT berth_next_event_id()`.execute(db);
  },
};
