import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Migrator, sql } from 'kysely';
import { recordLog } from '../../src/events/recorder.js';
import { type Db, migrateToLatest, openDatabase } from '../../src/store/database.js';
import { EVENT_FENCE_NAMESPACE } from '../../src/store/migrations/027-event-id-fence.js';
import { migrationProvider } from '../../src/store/migrations/index.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { describeEachDatabase } from '../support/database.js';
import { deploymentRow } from '../support/rows.js';
import { createPostgresDatabase } from '../support/server.js';

/*
 * Migration 027 (PostgreSQL only) moves event ids from an identity column to a sequence drawn
 * through a function that fences each writing transaction (docs/architecture.md, "Event ids
 * without gaps"). Ids already given must never come back: a client's Last-Event-ID names one.
 */
describeEachDatabase(
  'migration 027 on events of an earlier version',
  () => {
    let db: Db;
    let drop: () => Promise<void>;
    let deploymentId: string;
    const line = (message: string) => ({ deploymentId, revisionId: 'r', logType: 'build' as const, level: 'INFO', message });

    before(async () => {
      const postgres = await createPostgresDatabase();
      drop = postgres.drop;
      db = openDatabase({ kind: 'postgres', url: postgres.url });
      const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo('025-audit-actor-reason');
      if (error) throw error;
      const now = new Date().toISOString();
      await db.insertInto('organizations').values({ id: 'org', name: 'org', created_at: now }).execute();
      await db.insertInto('workspaces').values({ id: 'ws', organization_id: 'org', name: 'ws', created_at: now }).execute();
      deploymentId = (await insertDeployment(db, deploymentRow('ws'))).id;
      for (const message of ['one', 'two', 'three']) await recordLog(db, line(message));
      // The newest event is gone (its revision pruned, say): its id was given all the same.
      await db.deleteFrom('deployment_events').where('message', '=', 'three').execute();
      await migrateToLatest(db);
    });
    after(async () => {
      await db?.destroy();
      await drop?.();
    });

    test('ids go on after the last one the identity gave, never reusing it', async () => {
      assert.equal(await recordLog(db, line('four')), 4);
    });

    test('a writing transaction holds one fence lock, below its first id, until it ends', async () => {
      const fences = async () => {
        const { rows } = await sql<{ bound: string }>`
          SELECT (classid::bigint - ${sql.lit(EVENT_FENCE_NAMESPACE)}) * 2147483648 + objid::bigint AS bound FROM pg_locks
          WHERE locktype = 'advisory' AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(db);
        return rows.map((row) => Number(row.bound));
      };
      const ids = await db.transaction().execute(async (trx) => {
        const written = [await recordLog(trx, line('five')), await recordLog(trx, line('six')), await recordLog(trx, line('seven'))];
        assert.deepEqual(await fences(), [written[0]! - 1], 'one lock, naming the id drawn before the first');
        return written;
      });
      assert.deepEqual(ids, [5, 6, 7]);
      assert.deepEqual(await fences(), [], 'released at commit');
    });
  },
  { kinds: ['postgres'] },
);
