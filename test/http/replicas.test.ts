import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { createPostgresDatabase, startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

/**
 * Each server keeps the decrypted secrets of the revisions it has read. Two servers on one
 * PostgreSQL stand for replicas behind a load balancer: whatever one of them changes, the
 * other answers at once, with no stale secrets or revisions.
 */
describeEachDatabase(
  'two servers on one database',
  () => {
    let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
    let first: TestServer;
    let second: TestServer;
    let viaFirst: Client;
    let viaSecond: Client;

    before(async () => {
      database = await createPostgresDatabase();
      const shared = { postgresUrl: database.url, bootstrapApiKey: `berth_test_${randomUUID()}`, encryptionKey: randomBytes(32).toString('hex') };
      first = await startTestServer('postgres', shared);
      second = await startTestServer('postgres', shared);
      viaFirst = client(first.url, { key: shared.bootstrapApiKey });
      viaSecond = client(second.url, { key: shared.bootstrapApiKey });
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await database?.drop();
    });

    const secret = (name: string) => ({ name, value: `value-${randomUUID()}` });
    const imageDeployment = (secrets: { name: string; value: string }[]) => ({
      name: `replica-${randomUUID().slice(0, 8)}`,
      source: 'external_docker',
      source_config: { resource_spec: {} },
      source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
      secrets,
    });

    test('secrets changed through one server are what the other answers next', async () => {
      const original = [secret('OPENAI_API_KEY'), secret('DB_PASSWORD')];
      const created = await viaFirst('POST', '/v2/deployments', { body: imageDeployment(original) });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id as string;
      const firstRevision = created.body.latest_revision_id as string;
      assert.deepEqual((await viaSecond('GET', `/v2/deployments/${id}`)).body.secrets, original);

      const changed = [secret('OPENAI_API_KEY')];
      const patched = await viaFirst('PATCH', `/v2/deployments/${id}`, { body: { secrets: changed } });
      assert.equal(patched.status, 200, patched.text);
      const read = await viaSecond('GET', `/v2/deployments/${id}`);
      assert.equal(read.body.latest_revision_id, patched.body.latest_revision_id);
      assert.deepEqual(read.body.secrets, changed);
      const listed = await viaSecond('GET', `/v2/deployments?name_contains=${created.body.name}`);
      assert.deepEqual(
        listed.body.resources.map((d: { secrets: unknown }) => d.secrets),
        [changed],
      );

      // Rolling back through the second server brings the first revision's secrets back everywhere.
      const settled = await viaSecond('GET', `/v2/deployments/${id}/revisions/${firstRevision}?wait_for_terminal=30`);
      assert.equal(settled.status, 200, settled.text);
      const redeployed = await viaSecond('POST', `/v2/deployments/${id}/revisions/${firstRevision}/redeploy`);
      assert.equal(redeployed.status, 200, redeployed.text);
      assert.deepEqual(redeployed.body.secrets, original);
      const afterRollback = await viaFirst('GET', `/v2/deployments/${id}`);
      assert.equal(afterRollback.body.latest_revision_id, redeployed.body.latest_revision_id);
      assert.deepEqual(afterRollback.body.secrets, original);
    });

    test('a deployment deleted through one server is being deleted on the other at once', async () => {
      const created = await viaSecond('POST', '/v2/deployments', { body: imageDeployment([secret('TOKEN')]) });
      assert.equal(created.status, 201, created.text);
      assert.equal((await viaFirst('GET', `/v2/deployments/${created.body.id}`)).status, 200);
      assert.equal((await viaSecond('DELETE', `/v2/deployments/${created.body.id}`)).status, 204);
      const seen = await viaFirst('GET', `/v2/deployments/${created.body.id}`);
      assert.ok(seen.status === 404 || seen.body.status === 'AWAITING_DELETE', `status ${seen.status}: ${seen.text}`);
    });
    test("a listener's long poll on one server wakes on a change made through the other", async () => {
      // In a workspace of its own: with a listener there, image deployments must name one.
      const ws = await viaFirst('POST', '/v1/workspaces', { body: { name: `replica-listener-${randomUUID()}` } });
      const key = (await viaFirst('POST', '/v1/api-keys', { body: { name: 'replica-listener', workspace_id: ws.body.id } })).body.key as string;
      const member = client(first.url, { key });
      const listener = await member('POST', '/v2/listeners', {
        body: { compute_type: 'k8s', compute_id: 'replica', compute_config: { k8s_namespaces: ['a'] } },
      });
      assert.equal(listener.status, 201, listener.text);
      const agent = client(second.url, { key: listener.body.listener_key });
      const start = await agent('GET', '/v1/listener-protocol/state');
      assert.equal(start.status, 200, start.text);
      const waiting = agent('GET', `/v1/listener-protocol/state?since=${start.body.generation}&wait=30`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const patched = await member('PATCH', `/v2/listeners/${listener.body.id}`, { body: { compute_config: { k8s_namespaces: ['a', 'b'] } } });
      assert.equal(patched.status, 200, patched.text);
      const woken = await waiting;
      assert.ok(woken.body.generation > start.body.generation, woken.text);
    });
  },
  { kinds: ['postgres'] },
);
