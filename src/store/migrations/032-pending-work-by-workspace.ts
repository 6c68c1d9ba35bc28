import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/**
 * The revisions in progress (still the engine's or a listener's to move on), per workspace
 * and oldest first, so that the engine finds each workspace's next work through an index
 * instead of ranking every revision in progress: with 9,000 queued in one workspace, each
 * claim took ~25 ms of the event loop, ~11 times a second (bench/results.md, issue 24).
 *
 * Revisions carry their deployment's workspace (a deployment never changes workspace), set
 * by the insert and, for any insert that leaves it out, by a trigger. The index is partial:
 * only revisions in progress, so it stays as small as the queue. Its statuses are written
 * out here, not imported, so that this migration never changes; a test holds them equal to
 * IN_PROGRESS_STATUSES, and the query must name them as literals for either database to
 * see that the index covers it.
 */
export const pendingWorkByWorkspace: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`ALTER TABLE revisions ADD COLUMN workspace_id TEXT`.execute(db);
    await sql`UPDATE revisions SET workspace_id = (SELECT d.workspace_id FROM deployments d WHERE d.id = revisions.deployment_id)`.execute(db);
    if (db.getExecutor().adapter instanceof SqliteAdapter) {
      await sql`CREATE TRIGGER revisions_workspace AFTER INSERT ON revisions WHEN new.workspace_id IS NULL BEGIN
        UPDATE revisions SET workspace_id = (SELECT d.workspace_id FROM deployments d WHERE d.id = new.deployment_id) WHERE id = new.id;
      END`.execute(db);
    } else {
      await sql`
        CREATE FUNCTION berth_revision_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.workspace_id IS NULL THEN
            SELECT d.workspace_id INTO NEW.workspace_id FROM deployments d WHERE d.id = NEW.deployment_id;
          END IF;
          RETURN NEW;
        END $$`.execute(db);
      await sql`CREATE TRIGGER revisions_workspace BEFORE INSERT ON revisions FOR EACH ROW EXECUTE FUNCTION berth_revision_workspace()`.execute(db);
    }
    await sql`
      CREATE INDEX revisions_in_progress_by_workspace ON revisions (workspace_id, created_at)
      WHERE status IN ('CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING')`.execute(db);
  },
};

/** The statuses the index above covers, for the test that holds them equal to IN_PROGRESS_STATUSES. */
export const INDEXED_IN_PROGRESS = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING'] as const;
