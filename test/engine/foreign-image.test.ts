import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { describeOnEachDatabase } from '../support/suite.js';

/**
 * A revision handed to a listener is checked like one the engine runs: an image of another
 * workspace in Berth's local namespace is refused at create, and a revision stored before the
 * rule that names one ends DEPLOY_FAILED instead of reaching the listener's desired state.
 * (test/registry/workspace-scope.test.ts covers the registry and the engine's own runtime.)
 */
describeOnEachDatabase('images of another workspace on a listener', (ctx) => {
  test('refused at create, and a revision stored before the rule ends DEPLOY_FAILED without reaching the listener', async () => {
    const { server, api } = ctx();
    // Workspace A (the default one) has a deployment, so the local name below is a real one of A's.
    const ofA = await api('POST', '/v2/deployments', {
      body: { name: `a-${randomUUID().slice(0, 8)}`, source: 'internal_docker', source_config: {}, source_revision_config: {}, secrets: [] },
    });
    assert.equal(ofA.status, 201, ofA.text);
    const imageOfA = `localhost/berth/${server.workspaceId}/${ofA.body.id}:${ofA.body.latest_revision_id}`;

    // Workspace B, with a listener of its own.
    const ws = await api('POST', '/v1/workspaces', { body: { name: `b-${randomUUID()}` } });
    const key = await api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: ws.body.id } });
    const b = client(server.url, { key: key.body.key });
    const listener = await b('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: `c-${randomUUID().slice(0, 8)}`, compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(listener.status, 201, listener.text);
    const agent: Client = (method, path, options = {}) =>
      client(server.url, { key: listener.body.listener_key })(method, path, { ...options, headers: { 'x-berth-listener-protocol': '1', ...options.headers } });
    const place = (image: string) =>
      b('POST', '/v2/deployments', {
        body: {
          name: `b-${randomUUID().slice(0, 8)}`,
          source: 'external_docker',
          source_config: { listener_id: listener.body.id, resource_spec: { cpu: 1, memory_mb: 512 } },
          source_revision_config: { image_uri: image },
          secrets: [],
        },
      });

    const refused = await place(imageOfA);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.code, 'image_not_in_workspace');

    const placed = await place('registry.local/agent:v1');
    assert.equal(placed.status, 201, placed.text);
    const deploymentId = placed.body.id as string;
    const first = placed.body.latest_revision_id as string;
    const status = async (revisionId: string) => (await b('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
    await eventually(async () => (await status(first)).status === 'AWAITING_DEPLOY', 'the first revision to be handed over');
    assert.equal((await b('POST', `/v2/deployments/${deploymentId}/revisions/${first}/interruption`)).status, 200);

    // As if stored before the rule: the finished revision names A's image, and B redeploys it.
    const db = server.berth.db;
    const row = await db.selectFrom('revisions').select('source_revision_config').where('id', '=', first).executeTakeFirstOrThrow();
    const config = { ...JSON.parse(row.source_revision_config), image_uri: imageOfA };
    await db
      .updateTable('revisions')
      .set({ source_revision_config: JSON.stringify(config) })
      .where('id', '=', first)
      .execute();
    const redeployed = await b('POST', `/v2/deployments/${deploymentId}/revisions/${first}/redeploy`);
    assert.equal(redeployed.status, 200, redeployed.text);
    const second = redeployed.body.latest_revision_id as string;
    const failed = await eventually(async () => {
      const revision = await status(second);
      return revision.status !== 'CREATING' && revision.status !== 'QUEUED' ? revision : undefined;
    }, 'the redeployed revision to end');
    assert.equal(failed.status, 'DEPLOY_FAILED');
    assert.match(failed.status_message, /local image namespace/);
    const state = await agent('GET', '/v1/listener-protocol/state');
    assert.equal(state.status, 200, state.text);
    assert.ok(!JSON.stringify(state.body).includes(imageOfA), "A's image never reaches B's listener");
  });
});
