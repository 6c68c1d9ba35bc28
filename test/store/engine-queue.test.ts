import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery } from 'kysely';
import { IN_PROGRESS_STATUSES } from '../../src/domain/revision-status.js';
import type { Db } from '../../src/store/database.js';
import { INDEXED_IN_PROGRESS } from '../../src/store/migrations/032-pending-work-by-workspace.js';
import { insertDeployment } from '../../src/store/repositories/deployments.js';
import { claimCandidates } from '../../src/store/repositories/leases.js';
import { describeEachDatabase, openTestDatabase } from '../support/database.js';
import { deploymentRow, revisionRow } from '../support/rows.js';

/** A time `seconds` after a fixed start, so that ages are exact. */
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();

test("migration 032's partial index covers exactly the statuses in progress", () => {
  assert.deepEqual([...INDEXED_IN_PROGRESS].sort(), [...IN_PROGRESS_STATUSES].sort());
});

/**
 * The engine's candidates come in rounds across workspaces, read through each workspace's
 * queue (migration 032) and no longer by ranking every revision in progress.
 */
describeEachDatabase("the engine's queue by workspace", (kind) => {
  let db: Db;
  let close: () => Promise<void>;
  const sent: CompiledQuery[] = [];
  let workspaces = 0;

  before(async () => {
    ({ db, close } = await openTestDatabase(kind, { log: (event) => void sent.push(event.query) }));
    await db
      .insertInto('organizations')
      .values({ id: 'org', name: 'org', created_at: at(0) })
      .execute();
  });
  after(() => close());

  /** A new workspace with one deployment per given age, each with a revision queued at that age. */
  async function workspaceWithQueue(ages: number[], turnAt?: string): Promise<{ workspaceId: string; deployments: string[] }> {
    workspaces += 1;
    const workspaceId = `ws-${kind}-${workspaces}`;
    await db
      .insertInto('workspaces')
      .values({ id: workspaceId, organization_id: 'org', name: workspaceId, created_at: at(0) })
      .execute();
    if (turnAt !== undefined) await db.insertInto('engine_turns').values({ workspace_id: workspaceId, turn_at: turnAt }).execute();
    const deployments: string[] = [];
    for (const age of ages) {
      const { id } = await insertDeployment(db, deploymentRow(workspaceId));
      // As a fixture inserts it, without the workspace: the trigger fills it in.
      await db
        .insertInto('revisions')
        .values(revisionRow(id, 1, { status: 'QUEUED', created_at: at(age), updated_at: at(age) }))
        .execute();
      deployments.push(id);
    }
    return { workspaceId, deployments };
  }

  async function clearQueues(): Promise<void> {
    await db.updateTable('revisions').set({ status: 'DEPLOYED' }).execute();
  }

  test('a revision inserted without its workspace gets it from the trigger', async () => {
    const { workspaceId, deployments } = await workspaceWithQueue([1]);
    const row = await db
      .selectFrom('revisions')
      .select('workspace_id')
      .where('deployment_id', '=', deployments[0] as string)
      .executeTakeFirstOrThrow();
    assert.equal(row.workspace_id, workspaceId);
    await clearQueues();
  });

  test("one workspace's long queue does not push another's single revision out of the first round", async () => {
    const busy = await workspaceWithQueue(Array.from({ length: 40 }, (_, i) => 100 + i));
    const other = await workspaceWithQueue([500]);
    const candidates = await claimCandidates(db, at(1000), [], 8, 64);
    assert.equal(candidates.length, 8);
    assert.deepEqual(
      candidates
        .slice(0, 2)
        .map((c) => c.id)
        .sort(),
      [busy.deployments[0], other.deployments[0]].sort(),
    );
    // The rest are the busy workspace's next oldest, in age order.
    assert.deepEqual(
      candidates.slice(2).map((c) => c.id),
      busy.deployments.slice(1, 7),
    );
    await clearQueues();
  });

  test('the workspace served least recently goes first; workspaces never served before any', async () => {
    const servedLong = await workspaceWithQueue([10], at(50));
    const servedJustNow = await workspaceWithQueue([5], at(900));
    const neverServed = await workspaceWithQueue([20]);
    const candidates = await claimCandidates(db, at(1000), [], 8, 64);
    assert.deepEqual(
      candidates.map((c) => c.id),
      [neverServed.deployments[0], servedLong.deployments[0], servedJustNow.deployments[0]],
    );
    await clearQueues();
  });

  test('among more workspaces than places whose turns tie, the oldest work wins whichever workspace is read first', async () => {
    // Twelve workspaces never served, ages in an order unrelated to their ids.
    const ages = [70, 30, 110, 10, 90, 50, 120, 20, 60, 100, 40, 80];
    const queues = [];
    for (const age of ages) queues.push(await workspaceWithQueue([age, age + 1000]));
    const candidates = await claimCandidates(db, at(5000), [], 8, 64);
    const oldestFirst = queues
      .map((queue, i) => ({ id: queue.deployments[0], age: ages[i] as number }))
      .sort((a, b) => a.age - b.age)
      .slice(0, 8)
      .map((entry) => entry.id);
    assert.deepEqual(
      candidates.map((c) => c.id),
      oldestFirst,
    );
    await clearQueues();
  });

  test('with more workspaces than places, the one served most recently waits, though its work is the oldest', async () => {
    const servedLast = await workspaceWithQueue([1, 2], at(999));
    const others = [];
    for (let i = 0; i < 8; i += 1) others.push(await workspaceWithQueue([100 + i, 200 + i], at(10 + i)));
    const candidates = await claimCandidates(db, at(5000), [], 8, 64);
    assert.deepEqual(
      candidates.map((c) => c.id),
      others.map((queue) => queue.deployments[0]),
    );
    assert.ok(!candidates.some((c) => c.id === servedLast.deployments[0]));
    await clearQueues();
  });

  test('a workspace holding its share is left out, and its queue is not read', async () => {
    const full = await workspaceWithQueue([1, 2]);
    const open = await workspaceWithQueue([3]);
    // Its first deployment holds a live lease: with a share of 1 the workspace is full.
    await db
      .updateTable('deployments')
      .set({ lease_owner: 'worker-x', lease_expires_at: at(2000) })
      .where('id', '=', full.deployments[0] as string)
      .execute();
    sent.length = 0;
    const candidates = await claimCandidates(db, at(1000), [], 8, 1);
    assert.deepEqual(
      candidates.map((c) => c.id),
      [open.deployments[0]],
    );
    assert.ok(
      sent.some((query) => query.parameters.includes(open.workspaceId)),
      "the open workspace's queue is read by its id",
    );
    assert.deepEqual(
      sent.filter((query) => query.parameters.includes(full.workspaceId)).map((query) => query.sql),
      [],
      "no statement reads the full workspace's queue",
    );
    await clearQueues();
  });

  if (kind === 'sqlite') {
    test("SQLite reads each workspace's queue and the workspaces with work through the partial index only", async () => {
      await workspaceWithQueue([1, 2, 3]);
      sent.length = 0;
      await claimCandidates(db, at(1000), [], 8, 64);
      const reads = sent.filter((query) => /\bfrom "?revisions"?\b/i.test(query.sql) && !/^\s*(insert|update)/i.test(query.sql));
      assert.ok(reads.length >= 2, `expected the workspaces and one queue to be read, saw ${reads.length} statements`);
      for (const query of reads) {
        const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]));
        const revisionReads = plan.rows.map((row) => row.detail).filter((detail) => /\b(r|f|n|revisions) USING\b|SCAN (r|f|n|revisions)\b/.test(detail));
        assert.ok(revisionReads.length > 0, `no read of revisions in the plan of ${query.sql}`);
        for (const detail of revisionReads) assert.match(detail, /revisions_in_progress_by_workspace/, `${query.sql}\n${detail}`);
      }
      await clearQueues();
    });
  }
});
