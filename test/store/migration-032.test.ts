import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Db, migrateToLatest } from '../../src/store/database.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { claimCandidates } from '../../src/store/repositories/leases.js';
import { describeEachDatabase } from '../support/database.js';
import { databaseAt } from '../support/migrations.js';
import { deploymentRow, revisionRow } from '../support/rows.js';

/**
 * Migration 032 gives every revision its deployment's workspace, for the engine's index of
 * work in progress: revisions queued through an upgrade must still be found, in their own
 * workspace's queue.
 */
describeEachDatabase('migration 032 on revisions queued through an upgrade', (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const ids: Record<string, string> = {};
  before(async () => {
    ({ db, close } = await databaseAt(kind, '031-github-notice-positions'));
    const now = new Date().toISOString();
    await db.insertInto('organizations').values({ id: 'org', name: 'org', created_at: now }).execute();
    for (const workspace of ['ws-a', 'ws-b']) {
      await db.insertInto('workspaces').values({ id: workspace, organization_id: 'org', name: workspace, created_at: now }).execute();
      const { id } = await insertDeployment(db, deploymentRow(workspace));
      ids[workspace] = id;
      await db
        .insertInto('revisions')
        .values(revisionRow(id, 1, { status: 'DEPLOYED' }))
        .execute();
      await db
        .insertInto('revisions')
        .values(revisionRow(id, 2, { status: 'QUEUED' }))
        .execute();
    }
    await migrateToLatest(db);
  });
  after(async () => close?.());

  test('each revision gets the workspace of its deployment', async () => {
    const rows = await db.selectFrom('revisions').select(['deployment_id', 'workspace_id']).execute();
    assert.equal(rows.length, 4);
    for (const row of rows) assert.equal(row.deployment_id, ids[row.workspace_id as string], `revision of ${row.deployment_id} in ${row.workspace_id}`);
  });

  test("the revisions queued before the upgrade are the engine's candidates after it, one per workspace", async () => {
    const candidates = await claimCandidates(db, new Date().toISOString(), [], 8, 64);
    assert.deepEqual(candidates.map((c) => [c.workspaceId, c.id]).sort(), [
      ['ws-a', ids['ws-a']],
      ['ws-b', ids['ws-b']],
    ]);
  });
});
