import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitingForShareMessage } from '../../src/domain/fair-share.js';
import { type Client, client } from '../support/http.js';
import { HeldRuntime, eventually } from '../support/runtimes.js';
import { createPostgresDatabase, startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

const image = (name: string, sourceConfig: Record<string, unknown> = {}) => ({
  name,
  source: 'external_docker',
  source_config: { resource_spec: {}, ...sourceConfig },
  source_revision_config: { image_uri: `registry.local/${name}:v1` },
  secrets: [],
});

/** A workspace of the server's organization and a member key bound to it. */
async function workspace(server: TestServer, name: string): Promise<Client> {
  const admin = client(server.url, { key: server.adminKey });
  const created = await admin('POST', '/v1/workspaces', { body: { name: `${name}-${Date.now()}` } });
  assert.equal(created.status, 201);
  const key = await admin('POST', '/v1/api-keys', { body: { name, workspace_id: created.body.id } });
  assert.equal(key.status, 201);
  return client(server.url, { key: key.body.key });
}

async function create(api: Client, name: string, sourceConfig: Record<string, unknown> = {}): Promise<{ id: string; revisionId: string }> {
  const res = await api('POST', '/v2/deployments', { body: image(name, sourceConfig) });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.id, revisionId: res.body.latest_revision_id };
}

async function revisionIn(api: Client, d: { id: string; revisionId: string }, wanted: string[], timeoutMs?: number) {
  return eventually(
    async () => {
      const res = await api('GET', `/v2/deployments/${d.id}/revisions/${d.revisionId}`);
      return wanted.includes(res.body.status) ? res.body : undefined;
    },
    `revision ${d.revisionId} to reach ${wanted.join('/')}`,
    timeoutMs,
  );
}

describeEachDatabase('fair engine slots', (kind) => {
  test("a hostile workspace filling its share with slow revisions does not hold up another workspace's image revision", async () => {
    const runtime = new HeldRuntime();
    const server = await startTestServer(kind, { overrides: { runtime, engineSettings: { concurrency: 3, workspaceSlots: 2 } } });
    try {
      const hostile = await workspace(server, 'hostile');
      const victim = await workspace(server, 'victim');
      const slow: { id: string; revisionId: string }[] = [];
      for (let i = 0; i < 5; i++) {
        runtime.hold(`slow-${i}`);
        slow.push(await create(hostile, `slow-${i}`));
      }
      await eventually(async () => runtime.waiting.size === 2, 'the hostile workspace to fill its share');
      // The rest of its revisions wait, saying why.
      const waiting = await eventually(async () => {
        const revisions = await Promise.all(slow.map((d) => hostile('GET', `/v2/deployments/${d.id}/revisions/${d.revisionId}`)));
        const queued = revisions.filter((r) => r.body.status === 'QUEUED');
        return queued.length === 3 ? queued : undefined;
      }, 'three hostile revisions to wait QUEUED');
      for (const r of waiting) assert.equal(r.body.status_message, waitingForShareMessage(2));

      const mine = await create(victim, 'quick');
      await revisionIn(victim, mine, ['DEPLOYED']);
      assert.equal(runtime.waiting.size, 2, 'the hostile workspace still holds exactly its share');

      runtime.releaseAll();
      for (const d of slow) await revisionIn(hostile, d, ['DEPLOYED'], 20_000);
      assert.equal(runtime.mostWaiting, 2, 'the hostile workspace never had more than its share at once');
    } finally {
      runtime.releaseAll();
      await server.close();
    }
  });

  test('free slots go round the workspaces with work, the one served least recently first', async () => {
    const runtime = new HeldRuntime();
    const server = await startTestServer(kind, { overrides: { runtime, engineSettings: { concurrency: 1, workspaceSlots: 1 } } });
    const engine = server.berth.engine;
    assert.ok(engine);
    try {
      const a = await workspace(server, 'a');
      const b = await workspace(server, 'b');
      const names = new Map<string, string>();
      const order = () => runtime.started.map((r) => names.get(r.deploymentId));
      await engine.stop();
      // Created oldest first: all of A's, then all of B's.
      const all: { api: Client; d: { id: string; revisionId: string } }[] = [];
      for (const [api, prefix] of [
        [a, 'a'],
        [b, 'b'],
      ] as const) {
        for (let i = 1; i <= 3; i++) {
          const d = await create(api, `${prefix}${i}`);
          names.set(d.id, `${prefix}${i}`);
          all.push({ api, d });
        }
      }
      await engine.start();
      for (const { api, d } of all) await revisionIn(api, d, ['DEPLOYED']);
      assert.deepEqual(order(), ['a1', 'b1', 'a2', 'b2', 'a3', 'b3']);

      // B got the last slot; a revision of B older than A's still waits for A's turn.
      await engine.stop();
      const b4 = await create(b, 'b4');
      names.set(b4.id, 'b4');
      const a4 = await create(a, 'a4');
      names.set(a4.id, 'a4');
      await engine.start();
      await revisionIn(a, a4, ['DEPLOYED']);
      await revisionIn(b, b4, ['DEPLOYED']);
      assert.deepEqual(order().slice(6), ['a4', 'b4']);
    } finally {
      await server.close();
    }
  });

  test("a step timeout above the operator's maximum is clamped to it, and the failure names the setting", async () => {
    const runtime = new HeldRuntime();
    const server = await startTestServer(kind, { overrides: { runtime }, env: { BERTH_MAX_DEPLOY_TIMEOUT_SECONDS: '1' } });
    try {
      const member = await workspace(server, 'timeouts');
      runtime.hold('stuck');
      const created = await member('POST', '/v2/deployments', { body: image('stuck', { deploy_timeout_seconds: 86400 }) });
      assert.equal(created.status, 201);
      const d = { id: created.body.id, revisionId: created.body.latest_revision_id };
      const failed = await revisionIn(member, d, ['DEPLOY_FAILED'], 20_000);
      assert.match(failed.status_message, /timed out after 1 s/);
      assert.match(failed.status_message, /BERTH_MAX_DEPLOY_TIMEOUT_SECONDS/);
      const logs = await member('GET', `/v2/deployments/${d.id}/revisions/${d.revisionId}/logs?type=deploy`);
      assert.match(
        JSON.stringify(logs.body),
        /at most 1 s on this server \(BERTH_MAX_DEPLOY_TIMEOUT_SECONDS\); source_config.deploy_timeout_seconds asks for 86400 s/,
      );
    } finally {
      runtime.releaseAll();
      await server.close();
    }
  });
});

describeEachDatabase(
  'fair engine slots across engine processes',
  () => {
    test("two engines together give a workspace no more than its share, and the other workspace's revision still runs", async (t) => {
      const database = await createPostgresDatabase();
      t.after(() => database.drop());
      const runtimes = [new HeldRuntime(), new HeldRuntime()];
      const encryptionKey = 'ab'.repeat(32);
      const engineSettings = { concurrency: 2, workspaceSlots: 2 };
      const first = await startTestServer('postgres', { postgresUrl: database.url, encryptionKey, overrides: { runtime: runtimes[0], engineSettings } });
      const second = await startTestServer('postgres', {
        postgresUrl: database.url,
        encryptionKey,
        bootstrapApiKey: first.adminKey,
        overrides: { runtime: runtimes[1], engineSettings },
      });
      const waiting = () => runtimes.reduce((n, r) => n + r.waiting.size, 0);
      try {
        const hostile = await workspace(first, 'hostile');
        const victim = await workspace(first, 'victim');
        const slow: { id: string; revisionId: string }[] = [];
        for (let i = 0; i < 6; i++) {
          for (const r of runtimes) r.hold(`slow-${i}`);
          slow.push(await create(hostile, `slow-${i}`));
        }
        await eventually(async () => waiting() === 2, 'the hostile workspace to fill its share');
        const mine = await create(victim, 'quick');
        await revisionIn(victim, mine, ['DEPLOYED']);
        assert.equal(waiting(), 2, 'four slots between two engines, still two for the hostile workspace');
        for (const r of runtimes) r.releaseAll();
        for (const d of slow) await revisionIn(hostile, d, ['DEPLOYED'], 30_000);
      } finally {
        for (const r of runtimes) r.releaseAll();
        await second.close();
        await first.close();
      }
    });
  },
  { kinds: ['postgres'] },
);
