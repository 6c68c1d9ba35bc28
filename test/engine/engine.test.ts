import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type GitIntegrationFixture, gitIntegration } from '../support/codehost.js';
import { type Client, client } from '../support/http.js';
import { GatedRuntime, eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';

const imageDeployment = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  source: 'external_docker',
  source_config: { resource_spec: {}, ...extra },
  source_revision_config: { image_uri: 'registry.local/agent:v1' },
  secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-engine-secret-1' }],
});

async function revisionStatus(api: Client, deploymentId: string, revisionId: string, wanted: string[]) {
  return eventually(
    async () => {
      const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
      return wanted.includes(res.body.status) ? res.body : undefined;
    },
    `revision ${revisionId} to reach ${wanted.join('/')}`,
  );
}

describeEachDatabase('revision engine', (kind) => {
  let server: TestServer;
  let api: Client;
  let runtime: GatedRuntime;
  let integration: GitIntegrationFixture;
  before(async () => {
    runtime = new GatedRuntime();
    runtime.open();
    server = await startTestServer(kind, { overrides: { runtime } });
    api = client(server.url, { key: server.adminKey });
    integration = await gitIntegration(api);
  });
  after(async () => {
    await server.close();
    await integration.remove();
  });

  test('an image deployment reaches DEPLOYED on its own, healthy at its URL', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment('engine-basic') });
    assert.equal(created.status, 201);
    const revision = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOYED']);
    const deployment = (await api('GET', `/v2/deployments/${created.body.id}`)).body;
    assert.equal(deployment.status, 'READY');
    assert.equal(deployment.active_revision_id, revision.id);
    assert.match(deployment.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(deployment.source_config.custom_url, deployment.url);
    assert.equal((await fetch(`${deployment.url}/ok`)).status, 200);

    const events = await server.berth.db
      .selectFrom('deployment_events')
      .select(['status'])
      .where('revision_id', '=', revision.id)
      .where('kind', '=', 'status')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.status),
      ['QUEUED', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'],
    );
    const started = runtime.started.find((r) => r.revisionId === revision.id);
    assert.equal(started?.env.OPENAI_API_KEY, 'sk-engine-secret-1', 'secrets reach the runtime as environment');
    assert.deepEqual(started?.resources, { cpu: 2, memoryMb: 4096 });
  });

  test('a PATCH makes a new revision that takes over; the old one keeps DEPLOYED and stops running', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment('engine-patch') });
    const first = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOYED']);
    const patched = await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { source_revision_config: { image_uri: 'registry.local/agent:v2' } } });
    assert.equal(patched.status, 200);
    const second = await revisionStatus(api, created.body.id, patched.body.latest_revision_id, ['DEPLOYED']);
    const deployment = (await api('GET', `/v2/deployments/${created.body.id}`)).body;
    assert.equal(deployment.active_revision_id, second.id);
    assert.equal((await api('GET', `/v2/deployments/${created.body.id}/revisions/${first.id}`)).body.status, 'DEPLOYED');
    assert.equal((await fetch(`${second.url}/ok`)).status, 200);
    await assert.rejects(fetch(`${first.url}/ok`), 'the replaced revision no longer serves');
  });

  test('a code-host revision goes through the build states and records its commit', async () => {
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: 'engine-codehost',
        source: 'github',
        source_config: { integration_id: integration.integrationId, repo_url: integration.repoUrl },
        source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
        secrets: [],
      },
    });
    const revision = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOYED']);
    assert.match(revision.source_revision_config.repo_commit_sha, /^[0-9a-f]{40}$/);
    const statuses = await server.berth.db
      .selectFrom('deployment_events')
      .select('status')
      .where('revision_id', '=', revision.id)
      .where('kind', '=', 'status')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      statuses.map((s) => s.status),
      ['QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'],
    );
  });

  test('an unhealthy image ends DEPLOY_FAILED with a message a person can act on', async () => {
    const body = imageDeployment('engine-unhealthy');
    body.source_revision_config.image_uri = 'registry.local/unhealthy:v1';
    const created = await api('POST', '/v2/deployments', { body });
    const revision = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOY_FAILED']);
    assert.match(revision.status_message, /^Deploy failed: GET \/ok on http:\/\/127\.0\.0\.1:\d+ answered 503/);
    const deployment = await eventually(async () => {
      const res = await api('GET', `/v2/deployments/${created.body.id}`);
      return res.body.status === 'UNUSED' ? res.body : undefined;
    }, 'deployment to become UNUSED');
    assert.equal(deployment.active_revision_id, null);
  });

  test('latest wins: queued older revisions are SKIPPED while one is in flight, then the newest deploys', async () => {
    runtime.close();
    try {
      const created = await api('POST', '/v2/deployments', { body: imageDeployment('engine-queue') });
      const id = created.body.id;
      await eventually(async () => runtime.waiting.has(created.body.latest_revision_id), 'first revision to start deploying');
      const patches = [];
      for (const tag of ['v2', 'v3', 'v4']) {
        patches.push((await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: `registry.local/agent:${tag}` } } })).body);
      }
      const newest = patches[2].latest_revision_id;
      await revisionStatus(api, id, patches[0].latest_revision_id, ['SKIPPED']);
      await revisionStatus(api, id, patches[1].latest_revision_id, ['SKIPPED']);
      const queued = await revisionStatus(api, id, newest, ['QUEUED']);
      assert.match(queued.status_message, /Waiting for revision 1 to finish/);
      runtime.open();
      await revisionStatus(api, id, created.body.latest_revision_id, ['DEPLOYED']);
      await revisionStatus(api, id, newest, ['DEPLOYED']);
    } finally {
      runtime.open();
    }
  });

  test('interruption stops an in-flight revision at once and lets the next one run', async () => {
    runtime.close();
    try {
      const created = await api('POST', '/v2/deployments', { body: imageDeployment('engine-interrupt') });
      const id = created.body.id;
      const first = created.body.latest_revision_id;
      await eventually(async () => runtime.waiting.has(first), 'first revision to start deploying');
      const next = (await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: 'registry.local/agent:v9' } } })).body;
      const interrupted = await api('POST', `/v2/deployments/${id}/revisions/${first}/interruption`);
      assert.equal(interrupted.status, 200);
      assert.equal(interrupted.body.status, 'INTERRUPTED');
      await eventually(async () => runtime.aborted.includes(first), 'the running step to be aborted');
      runtime.open();
      await revisionStatus(api, id, next.latest_revision_id, ['DEPLOYED']);
      assert.equal((await api('GET', `/v2/deployments/${id}/revisions/${first}`)).body.status, 'INTERRUPTED');
      // The key interrupted it, not Berth: one row, the key's; interrupting it again changes nothing and adds none.
      assert.equal((await api('POST', `/v2/deployments/${id}/revisions/${first}/interruption`)).status, 200);
      const rows = (await api('GET', `/v1/audit-log?target_id=${first}`)).body.resources;
      assert.deepEqual(
        rows.map((row: { action: string; actor: { type: string } }) => [row.action, row.actor.type]),
        [['revision.interrupt', 'api_key']],
      );
    } finally {
      runtime.open();
    }
  });

  test('a step that outlives its per-deployment timeout fails with the setting to raise', async () => {
    runtime.close();
    try {
      const created = await api('POST', '/v2/deployments', { body: imageDeployment('engine-timeout', { deploy_timeout_seconds: 1 }) });
      const revision = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOY_FAILED']);
      assert.match(revision.status_message, /Deploy timed out after 1 s.*source_config\.deploy_timeout_seconds/);
      // Berth stopped it: one row in the audit log, Berth's own, saying why.
      const rows = (await api('GET', `/v1/audit-log?target_id=${revision.id}`)).body.resources;
      assert.equal(rows.length, 1, JSON.stringify(rows));
      assert.equal(rows[0].action, 'revision.interrupt');
      assert.deepEqual({ ...rows[0].actor, reason: undefined }, { type: 'berth', name: 'Berth itself', reason: undefined });
      assert.match(rows[0].actor.reason, /the deploy step ran past its timeout of 1 s \(source_config\.deploy_timeout_seconds\)/);
      assert.equal(rows[0].workspace_id, server.workspaceId);
      assert.deepEqual([rows[0].client_address, rows[0].request_id], [null, null]);
      const berths = (await api('GET', `/v1/audit-log?actor=berth&target_id=${revision.id}`)).body.resources;
      assert.deepEqual(
        berths.map((row: { id: string }) => row.id),
        [rows[0].id],
      );
      // Hostile: a reader of another workspace sees none of this workspace's Berth rows.
      const other = (await api('POST', '/v1/workspaces', { body: { name: `engine-other-${Date.now()}` } })).body;
      const reader = (await api('POST', '/v1/api-keys', { body: { name: 'other-reader', role: 'read_only', workspace_id: other.id } })).body;
      const seen = await client(server.url, { key: reader.key })('GET', '/v1/audit-log?actor=berth&limit=100');
      assert.equal(seen.status, 200, seen.text);
      assert.ok(!seen.text.includes(revision.id), "another workspace's reader saw a Berth row of this one");
    } finally {
      runtime.open();
    }
  });

  test('delete tears down what runs, passes through AWAITING_DELETE, then answers 404', async () => {
    const created = await api('POST', '/v2/deployments', { body: imageDeployment('engine-delete') });
    const revision = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOYED']);
    const running = runtime.running().filter((h) => h.endsWith(revision.id));
    assert.equal(running.length, 1);
    const deleted = await api('DELETE', `/v2/deployments/${created.body.id}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    await eventually(async () => (await api('GET', `/v2/deployments/${created.body.id}`)).status === 404, 'deployment to be gone');
    assert.equal(runtime.running().filter((h) => h.endsWith(revision.id)).length, 0);
    await assert.rejects(fetch(`${revision.url}/ok`));
  });

  test('redeploying a code-host revision reuses its image without building again', async () => {
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: 'engine-rollback',
        source: 'codehost',
        source_config: { integration_id: integration.integrationId, repo_url: integration.repoUrl },
        source_revision_config: { repo_ref: 'main' },
        secrets: [],
      },
    });
    const first = await revisionStatus(api, created.body.id, created.body.latest_revision_id, ['DEPLOYED']);
    const redeployed = await api('POST', `/v2/deployments/${created.body.id}/revisions/${first.id}/redeploy`);
    assert.equal(redeployed.status, 200);
    const second = await revisionStatus(api, created.body.id, redeployed.body.latest_revision_id, ['DEPLOYED']);
    assert.equal(second.source_revision_config.repo_commit_sha, first.source_revision_config.repo_commit_sha);
    const steps = await server.berth.db.selectFrom('engine_step_runs').select('step').where('revision_id', '=', second.id).execute();
    assert.deepEqual(
      steps.map((s) => s.step),
      ['deploy'],
    );
  });
});
