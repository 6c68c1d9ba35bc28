import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/**
 * An index for `name_contains`, a substring that no b-tree can seek: a search matching a
 * few of 100,000 names walked the whole listing index.
 *
 * SQLite: an FTS5 table with the trigram tokenizer. Its rowids come from
 * `deployment_search_keys`, whose INTEGER PRIMARY KEY is stable, because the implicit
 * rowid of `deployments` (a text primary key) may be renumbered by VACUUM. Triggers keep
 * both in step in the transaction that writes the deployment.
 *
 * PostgreSQL: a pg_trgm GIN index on `lower(name)`, which the unchanged LIKE query uses
 * when the planner finds it cheaper. pg_trgm ships with PostgreSQL's contrib package and
 * is a trusted extension; where it is missing, or the role may not create it, the search
 * keeps scanning (same answers, slower) and the migration says nothing more.
 */
export const nameSearch: Migration = {
  async up(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof SqliteAdapter) {
      await sql`CREATE TABLE deployment_search_keys (key INTEGER PRIMARY KEY, deployment_id TEXT NOT NULL UNIQUE)`.execute(db);
      await sql`CREATE VIRTUAL TABLE deployment_name_search USING fts5(name, tokenize = 'trigram case_sensitive 0')`.execute(db);
      await sql`INSERT INTO deployment_search_keys (deployment_id) SELECT id FROM deployments`.execute(db);
      await sql`INSERT INTO deployment_name_search (rowid, name) SELECT k.key, d.name FROM deployment_search_keys k JOIN deployments d ON d.id = k.deployment_id`.execute(
        db,
      );
      await sql`CREATE TRIGGER deployments_search_insert AFTER INSERT ON deployments BEGIN
        INSERT INTO deployment_search_keys (deployment_id) VALUES (new.id);
        INSERT INTO deployment_name_search (rowid, name) VALUES (last_insert_rowid(), new.name);
      END`.execute(db);
      await sql`CREATE TRIGGER deployments_search_delete AFTER DELETE ON deployments BEGIN
        DELETE FROM deployment_name_search WHERE rowid = (SELECT key FROM deployment_search_keys WHERE deployment_id = old.id);
        DELETE FROM deployment_search_keys WHERE deployment_id = old.id;
      END`.execute(db);
      await sql`CREATE TRIGGER deployments_search_rename AFTER UPDATE OF name ON deployments BEGIN
        UPDATE deployment_name_search SET name = new.name WHERE rowid = (SELECT key FROM deployment_search_keys WHERE deployment_id = new.id);
      END`.execute(db);
      return;
    }
    const { rows } = await sql<{ available: boolean; allowed: boolean }>`
      SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') AS available,
             (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) OR has_database_privilege(current_database(), 'CREATE') AS allowed`.execute(db);
    if (!rows[0]?.available || !rows[0]?.allowed) return;
    await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
    await sql`CREATE INDEX deployments_name_trgm_idx ON deployments USING gin (lower(name) gin_trgm_ops)`.execute(db);
  },
};
