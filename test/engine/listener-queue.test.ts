import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { deadline } from '../support/deadline.js';
import { describeEachDatabase } from '../support/database.js';

/**
 * A deployment placed on a listener that gets more revisions must not make the engine
 * claim it over and over (issue 8, item 1): that starved the event loop on SQLite and
 * every other deployment on PostgreSQL.
 */
describeEachDatabase('engine with revisions waiting on a listener', (kind) => {
  let server: TestServer;
  let admin: Client;
  let placed: Client;
  before(async () => {
    server = await startTestServer(kind);
    admin = client(server.url, { key: server.adminKey });
    // The listener lives in a workspace of its own: in a workspace with listeners every
    // image deployment must name one.
    const workspace = await admin('POST', '/v1/workspaces', { body: { name: 'with-listener' } });
    const key = await admin('POST', '/v1/api-keys', { body: { name: 'placed', workspace_id: workspace.body.id } });
    placed = client(server.url, { key: key.body.key });
  });
  after(async () => server.close());

  test('new revisions replace the handed-over one, /ok answers throughout, and other deployments progress', async (t) => {
    const listener = await placed('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'cluster-a', compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(listener.status, 201, listener.text);
    const created = await placed('POST', '/v2/deployments', {
      body: {
        name: 'on-listener',
        source: 'external_docker',
        source_config: { listener_id: listener.body.id, resource_spec: {} },
        source_revision_config: { image_uri: 'registry.local/agent:v1' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    const deploymentId = created.body.id as string;
    const status = async (revisionId: string) => (await placed('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
    const first = await eventually(async () => {
      const revision = await status(created.body.latest_revision_id);
      return revision.status === 'AWAITING_DEPLOY' ? revision : undefined;
    }, 'the first revision to be handed to the listener');
    assert.match(first.status_message, new RegExp(`Handed to listener ${listener.body.id}`));

    // Health checks every 50 ms for as long as the test runs; each must answer.
    const failures: string[] = [];
    let answered = 0;
    let polling = true;
    // Ends with the test even when an assertion below fails (the loop would keep the file alive).
    t.after(() => {
      polling = false;
    });
    const poller = (async () => {
      while (polling) {
        try {
          const res = await fetch(`${server.url}/ok`, { signal: AbortSignal.timeout(deadline(5000)) });
          if (res.status === 200) answered += 1;
          else failures.push(`status ${res.status}`);
        } catch (error) {
          failures.push((error as Error).message);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    const second = await placed('POST', `/v2/deployments/${deploymentId}/revisions`, { body: {} });
    assert.equal(second.status, 201, second.text);
    const third = await placed('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_revision_config: { image_uri: 'registry.local/agent:v2' } } });
    assert.equal(third.status, 200, third.text);
    const thirdId = third.body.latest_revision_id as string;

    // An unrelated deployment in another workspace still goes all the way.
    const other = await admin('POST', '/v2/deployments', {
      body: {
        name: 'elsewhere',
        source: 'external_docker',
        source_config: {},
        source_revision_config: { image_uri: 'registry.local/agent:v1' },
        secrets: [],
      },
    });
    assert.equal(other.status, 201, other.text);
    await eventually(async () => {
      const revision = (await admin('GET', `/v2/deployments/${other.body.id}/revisions/${other.body.latest_revision_id}`)).body;
      return revision.status === 'DEPLOYED';
    }, 'the other deployment to be DEPLOYED');

    const handed = await eventually(async () => {
      const revision = await status(thirdId);
      return revision.status === 'AWAITING_DEPLOY' ? revision : undefined;
    }, 'the newest revision to be handed to the listener');
    assert.match(handed.status_message, /Handed to listener/);
    assert.equal((await status(first.id)).status, 'SKIPPED', 'the handed-over revision is replaced by the newer one');
    assert.equal((await status(second.body.id)).status, 'SKIPPED');

    // Settled: the engine must leave the deployment alone now, not claim it again and again.
    const engine = server.berth.engine;
    assert.ok(engine, 'the engine runs in the test server');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const claimsBefore = engine.claims;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(engine.claims, claimsBefore, 'no claims while nothing changes');

    polling = false;
    await poller;
    assert.deepEqual(failures, [], 'GET /ok answered every time');
    assert.ok(answered > 0);
  });
});
