import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery } from 'kysely';
import type { Db } from '../../src/store/database.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { claimCandidates, leaseHoldersOn, releaseLeasesOf, takeFairLease, waitingForShare } from '../../src/store/repositories/leases.js';
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

  test("an engine starting up finds its host's earlier workers by their leases, live or expired, and releases only theirs", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await insertDeployment(db, deploymentRow('ws-b'))).id);
    const now = new Date().toISOString();
    assert.equal(await takeFairLease(db, { id: ids[0] as string, workspaceId: 'ws-b' }, 'host-1/100/aa', now, later(60), 10), 'leased');
    assert.equal(await takeFairLease(db, { id: ids[1] as string, workspaceId: 'ws-b' }, 'host-1/200/bb', now, later(-60), 10), 'leased');
    // Another host whose name starts alike; below, a host name with LIKE's wildcard in it.
    assert.equal(await takeFairLease(db, { id: ids[2] as string, workspaceId: 'ws-b' }, 'host-10/300/cc', now, later(60), 10), 'leased');
    assert.deepEqual((await leaseHoldersOn(db, 'host-1')).sort(), ['host-1/100/aa', 'host-1/200/bb']);
    assert.deepEqual(await leaseHoldersOn(db, 'host_1'), []);

    const mine = sent.length;
    await releaseLeasesOf(db, 'host-1/200/bb');
    const owners = await db.selectFrom('deployments').select(['id', 'lease_owner']).where('id', 'in', ids).execute();
    assert.deepEqual(
      new Map(owners.map((row) => [row.id, row.lease_owner])),
      new Map([
        [ids[0], 'host-1/100/aa'],
        [ids[1], null],
        [ids[2], 'host-10/300/cc'],
      ]),
    );
    if (kind !== 'sqlite') return;
    await leaseHoldersOn(db, 'host-1');
    // Both statements read the leased rows through the lease index, not every deployment.
    for (const query of sent.slice(mine).filter((one) => /lease_owner/.test(one.sql) && !/^select "id", "lease_owner"/.test(one.sql))) {
      const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]));
      const details = plan.rows.map((row) => row.detail).join('\n');
      assert.match(details, /deployments_lease_idx/, query.sql);
      assert.doesNotMatch(details, /^SCAN deployments\b/m, query.sql);
    }
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
