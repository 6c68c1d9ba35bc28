import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery } from 'kysely';
import type { Db } from '../../src/store/database.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { claimCandidates, takeFairLease, waitingForShare } from '../../src/store/repositories/leases.js';
import { describeEachDatabase, openTestDatabase } from '../support/database.js';
import { deploymentRow } from '../support/rows.js';

const later = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();

describeEachDatabase("a workspace's share of live leases", (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  /** Every statement sent, for the query plans below. */
  const sent: CompiledQuery[] = [];

  before(async () => {
    ({ db, close } = await openTestDatabase(kind, { log: (event) => void sent.push(event.query) }));
    const now = new Date().toISOString();
    await db.insertInto('organizations').values({ id: 'org', name: 'org', created_at: now }).execute();
    for (const id of ['ws-a', 'ws-b']) await db.insertInto('workspaces').values({ id, organization_id: 'org', name: id, created_at: now }).execute();
  });
  after(() => close());

  test('counts live leases only: a full workspace is refused, expired leases free its share', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) ids.push((await insertDeployment(db, deploymentRow('ws-a'))).id);
    const other = (await insertDeployment(db, deploymentRow('ws-b'))).id;
    const now = new Date().toISOString();
    const lease = (id: string, workspaceId: string) => takeFairLease(db, { id, workspaceId }, 'worker-1', now, later(60), 2);
    assert.equal(await lease(ids[0] as string, 'ws-a'), 'leased');
    assert.equal(await lease(ids[1] as string, 'ws-a'), 'leased');
    assert.equal(await lease(ids[2] as string, 'ws-a'), 'full');
    assert.equal(await lease(other, 'ws-b'), 'leased', "another workspace's share is its own");
    assert.equal(await lease(other, 'ws-b'), 'taken', 'a live lease is never taken twice');
    // Both of ws-a's leases expire: its share is free again.
    await db
      .updateTable('deployments')
      .set({ lease_expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('workspace_id', '=', 'ws-a')
      .execute();
    assert.equal(await lease(ids[3] as string, 'ws-a'), 'leased');
    // The listing of candidates and of revisions waiting for their share run the same count.
    assert.deepEqual(await claimCandidates(db, new Date().toISOString(), [], 8, 1), []);
    assert.deepEqual(await waitingForShare(db, new Date().toISOString(), 1, 8), []);
  });

  if (kind === 'sqlite') {
    test("SQLite reads live leases through the lease index, never through the workspace's deployments", async () => {
      const counting = sent.filter((query) => query.sql.includes('"live_leases"'));
      assert.ok(counting.length >= 3, `expected the claims above to count leases, saw ${counting.length} statements`);
      for (const query of counting) {
        const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]));
        const details = plan.rows.map((row) => row.detail);
        assert.ok(
          details.some((detail) => detail.includes('deployments_lease_idx')),
          `no lease index in the plan of ${query.sql}:\n${details.join('\n')}`,
        );
        // A plan through the workspace's index (or a scan of deployments) costs every deployment of the workspace.
        for (const detail of details)
          assert.doesNotMatch(detail, /deployments_workspace_name_unique|deployments_listing_idx|^SCAN (deployments|l)\b/, query.sql);
      }
    });
  }
});
