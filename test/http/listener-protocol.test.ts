import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { MAX_STATE_WAIT_SECONDS } from '../../src/contract/listener-protocol.js';
import { type Client, client } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { describeOnEachDatabase, type SuiteContext } from '../support/suite.js';

const P = '/v1/listener-protocol';

interface Setup {
  /** A member key bound to a workspace of its own (in a workspace with listeners, image deployments must name one). */
  api: Client;
  workspaceId: string;
  listenerId: string;
  listenerKey: string;
  /** The agent's client: the listener key and the protocol header. */
  agent: Client;
}

async function setup(ctx: SuiteContext, computeType = 'k8s'): Promise<Setup> {
  const ws = await ctx.api('POST', '/v1/workspaces', { body: { name: `lp-${randomUUID()}` } });
  assert.equal(ws.status, 201, ws.text);
  const key = await ctx.api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: ws.body.id } });
  const api = client(ctx.server.url, { key: key.body.key });
  const listener = await api('POST', '/v2/listeners', {
    body: {
      compute_type: computeType,
      compute_id: `c-${randomUUID().slice(0, 8)}`,
      compute_config: computeType === 'k8s' ? { k8s_namespaces: ['agents'] } : {},
    },
  });
  assert.equal(listener.status, 201, listener.text);
  assert.match(listener.body.listener_key, /^berth_/);
  const agentKey = listener.body.listener_key as string;
  const raw = client(ctx.server.url, { key: agentKey });
  const agent: Client = (method, path, options = {}) => raw(method, path, { ...options, headers: { 'x-berth-listener-protocol': '1', ...options.headers } });
  return { api, workspaceId: ws.body.id, listenerId: listener.body.id, listenerKey: agentKey, agent };
}

async function placeDeployment(
  s: Setup,
  overrides: { name?: string; image?: string; secrets?: { name: string; value: string }[]; deployTimeout?: number; namespace?: string } = {},
) {
  const created = await s.api('POST', '/v2/deployments', {
    body: {
      name: overrides.name ?? `d-${randomUUID().slice(0, 8)}`,
      source: 'external_docker',
      source_config: {
        listener_id: s.listenerId,
        ...(overrides.namespace ? { listener_config: { k8s_namespace: overrides.namespace } } : {}),
        resource_spec: { cpu: 1, memory_mb: 512 },
        deploy_timeout_seconds: overrides.deployTimeout ?? null,
      },
      source_revision_config: { image_uri: overrides.image ?? 'registry.local/agent:v1' },
      secrets: overrides.secrets ?? [],
    },
  });
  assert.equal(created.status, 201, created.text);
  return { deploymentId: created.body.id as string, revisionId: created.body.latest_revision_id as string };
}

async function revisionOf(s: Setup, deploymentId: string, revisionId: string) {
  const res = await s.api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function handedOver(s: Setup, deploymentId: string, revisionId: string) {
  return eventually(async () => {
    const revision = await revisionOf(s, deploymentId, revisionId);
    return revision.status === 'AWAITING_DEPLOY' ? revision : undefined;
  }, `revision ${revisionId} to be handed to the listener`);
}

async function deployLogs(s: Setup, deploymentId: string, revisionId: string): Promise<string[]> {
  const res = await s.api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy&limit=100`);
  assert.equal(res.status, 200, res.text);
  return (res.body.logs as { message: string }[]).map((line) => line.message);
}

describeOnEachDatabase('listener protocol', (ctx) => {
  test('a listener key reaches the protocol and nothing else; API keys do not reach the protocol', async () => {
    const s = await setup(ctx());
    for (const [method, path] of [
      ['GET', '/v2/deployments'],
      ['GET', '/v2/listeners'],
      ['GET', `/v2/listeners/${s.listenerId}`],
      ['GET', '/v1/api-keys'],
      ['GET', '/api-host/v2/deployments'],
    ] as const) {
      const res = await s.agent(method, path);
      assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      assert.equal(res.body.code, 'listener_key_forbidden');
    }
    for (const path of [`${P}/state`, `/api-host${P}/state`]) {
      const own = await s.agent('GET', path);
      assert.equal(own.status, 200, own.text);
      assert.equal(own.body.listener_id, s.listenerId);
      assert.equal(own.body.protocol_version, 1);
      const withApiKey = await s.api('GET', path);
      assert.equal(withApiKey.status, 403);
      assert.equal(withApiKey.body.code, 'listener_key_required');
      const admin = await ctx().api('POST', `${P}/heartbeat`, { body: { version: '1' } });
      assert.equal(admin.status, 403);
    }
    assert.equal((await ctx().anonymous('GET', `${P}/state`)).status, 401);
    const wrongVersion = await s.agent('GET', `${P}/state`, { headers: { 'x-berth-listener-protocol': '2' } });
    assert.equal(wrongVersion.status, 400);
    assert.equal(wrongVersion.body.code, 'listener_protocol_unsupported');

    // Another listener's key sees only its own deployments and cannot report on others'.
    const { deploymentId, revisionId } = await placeDeployment(s);
    await handedOver(s, deploymentId, revisionId);
    const other = await setup(ctx());
    const otherState = await other.agent('GET', `${P}/state`);
    assert.deepEqual(otherState.body.deployments, []);
    const foreign = await other.agent('POST', `${P}/reports`, {
      body: {
        revisions: [{ deployment_id: deploymentId, revision_id: revisionId, status: 'DEPLOYED', url: 'http://x' }],
        deletions: [{ deployment_id: deploymentId }],
      },
    });
    assert.equal(foreign.status, 200, foreign.text);
    assert.deepEqual(foreign.body, {
      revisions: [{ revision_id: revisionId, outcome: 'fenced' }],
      deletions: [{ deployment_id: deploymentId, outcome: 'fenced' }],
    });
    assert.equal((await revisionOf(s, deploymentId, revisionId)).status, 'AWAITING_DEPLOY');

    // Keys made through the admin endpoint are listener keys too, and revoking one ends it.
    const made = await ctx().api('POST', '/v1/api-keys', { body: { name: 'rotated', listener_id: s.listenerId } });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.role, 'listener');
    assert.equal(made.body.listener_id, s.listenerId);
    const rotated = client(ctx().server.url, { key: made.body.key });
    assert.equal((await rotated('GET', `${P}/state`)).body.listener_id, s.listenerId);
    assert.equal((await rotated('GET', '/v2/deployments')).status, 403);
    assert.equal((await ctx().api('DELETE', `/v1/api-keys/${made.body.id}`)).status, 204);
    assert.equal((await rotated('GET', `${P}/state`)).status, 401);
    const unknown = await ctx().api('POST', '/v1/api-keys', { body: { listener_id: randomUUID() } });
    assert.equal(unknown.status, 404);
  });

  test('the desired state holds the handed-over revision with its image, resources, secrets and namespace', async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId } = await placeDeployment(s, { secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-secret-value' }], deployTimeout: 120 });
    await handedOver(s, deploymentId, revisionId);
    const state = await s.agent('GET', `${P}/state`);
    assert.equal(state.status, 200, state.text);
    assert.ok(state.body.generation > 0);
    assert.equal(state.body.deployments.length, 1);
    const [desired] = state.body.deployments;
    assert.equal(desired.deployment_id, deploymentId);
    assert.equal(desired.revision_id, revisionId);
    assert.equal(desired.revision_status, 'AWAITING_DEPLOY');
    assert.equal(desired.image_uri, 'registry.local/agent:v1');
    assert.equal(desired.resource_spec.cpu, 1);
    assert.equal(desired.resource_spec.memory_mb, 512);
    assert.equal(desired.namespace, 'agents');
    assert.equal(desired.deploy_timeout_seconds, 120);
    const secrets = Object.fromEntries((desired.secrets as { name: string; value: string }[]).map((e) => [e.name, e.value]));
    assert.equal(secrets.OPENAI_API_KEY, 'sk-secret-value');
    assert.equal(secrets.LANGSMITH_HOST_REVISION_ID, revisionId);
    assert.deepEqual(state.body.deletions, []);
  });

  test('a long poll wakes on a change, and the cursor resumes without missing one', async () => {
    const s = await setup(ctx());
    const first = await s.agent('GET', `${P}/state`);
    const generation = first.body.generation as number;
    // Nothing changed: an immediate answer (wait=0) with the same generation.
    const same = await s.agent('GET', `${P}/state?since=${generation}&wait=0`);
    assert.equal(same.body.generation, generation);

    const waiting = s.agent('GET', `${P}/state?since=${generation}&wait=30`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const patched = await s.api('PATCH', `/v2/listeners/${s.listenerId}`, { body: { compute_config: { k8s_namespaces: ['agents', 'more'] } } });
    assert.equal(patched.status, 200, patched.text);
    const woken = await waiting;
    assert.equal(woken.status, 200, woken.text);
    assert.ok(woken.body.generation > generation, 'the waiting poll answered with the change');

    // A change while the agent was away: resuming from the old cursor answers at once.
    const { deploymentId, revisionId } = await placeDeployment(s, { namespace: 'more' });
    await handedOver(s, deploymentId, revisionId);
    const resumed = await s.agent('GET', `${P}/state?since=${woken.body.generation}&wait=30`);
    assert.ok(resumed.body.generation > woken.body.generation);
    assert.equal(resumed.body.deployments[0].revision_id, revisionId);
    assert.equal(resumed.body.deployments[0].namespace, 'more');
  });

  test('reports move the revision to DEPLOYED and the deployment to READY; a retry changes nothing', async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId } = await placeDeployment(s);
    await handedOver(s, deploymentId, revisionId);

    const deploying = await s.agent('POST', `${P}/reports`, {
      body: { revisions: [{ deployment_id: deploymentId, revision_id: revisionId, status: 'DEPLOYING', logs: [{ level: 'INFO', message: 'pulling image' }] }] },
    });
    assert.deepEqual(deploying.body.revisions, [{ revision_id: revisionId, outcome: 'applied' }]);
    assert.equal((await revisionOf(s, deploymentId, revisionId)).status, 'DEPLOYING');
    assert.equal((await s.agent('GET', `${P}/state`)).body.deployments[0].revision_status, 'DEPLOYING');

    const report = {
      revisions: [
        {
          deployment_id: deploymentId,
          revision_id: revisionId,
          status: 'DEPLOYED',
          url: 'http://agent.example:8000',
          logs: [{ level: 'INFO', message: 'rollout complete' }],
        },
      ],
    };
    const deployed = await s.agent('POST', `${P}/reports`, { body: report });
    assert.deepEqual(deployed.body.revisions, [{ revision_id: revisionId, outcome: 'applied' }]);
    const revision = await revisionOf(s, deploymentId, revisionId);
    assert.equal(revision.status, 'DEPLOYED');
    const deployment = (await s.api('GET', `/v2/deployments/${deploymentId}`)).body;
    assert.equal(deployment.status, 'READY');
    assert.equal(deployment.active_revision_id, revisionId);
    assert.equal(deployment.source_config.custom_url, 'http://agent.example:8000');
    const reconciled = await s.api('GET', `/v2/deployments?remote_reconciled=true`);
    assert.deepEqual(
      reconciled.body.resources.map((d: { id: string }) => d.id),
      [deploymentId],
    );
    const revisions = await s.api('GET', `/v2/deployments/${deploymentId}/revisions?remote_reconciled=true`);
    assert.deepEqual(
      revisions.body.resources.map((r: { id: string }) => r.id),
      [revisionId],
    );
    const logsBefore = await deployLogs(s, deploymentId, revisionId);
    assert.ok(logsBefore.includes('pulling image') && logsBefore.includes('rollout complete'), logsBefore.join('\n'));

    const retried = await s.agent('POST', `${P}/reports`, { body: report });
    assert.deepEqual(retried.body.revisions, [{ revision_id: revisionId, outcome: 'unchanged' }]);
    assert.deepEqual(await deployLogs(s, deploymentId, revisionId), logsBefore, 'no duplicate log lines');
    const state = await s.agent('GET', `${P}/state`);
    assert.equal(state.body.deployments[0].revision_status, 'DEPLOYED');
  });

  test('DEPLOYED straight from AWAITING_DEPLOY; a report on a superseded revision is fenced and logged', async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId: old } = await placeDeployment(s);
    await handedOver(s, deploymentId, old);
    const patched = await s.api('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_revision_config: { image_uri: 'registry.local/agent:v2' } } });
    assert.equal(patched.status, 200, patched.text);
    const newer = patched.body.latest_revision_id as string;
    await handedOver(s, deploymentId, newer);
    assert.equal((await revisionOf(s, deploymentId, old)).status, 'SKIPPED');

    const late = await s.agent('POST', `${P}/reports`, {
      body: { revisions: [{ deployment_id: deploymentId, revision_id: old, status: 'DEPLOYED', url: 'http://old' }] },
    });
    assert.deepEqual(late.body.revisions, [{ revision_id: old, outcome: 'fenced' }]);
    assert.equal((await revisionOf(s, deploymentId, old)).status, 'SKIPPED');
    assert.ok((await deployLogs(s, deploymentId, old)).some((line) => /ignored/.test(line)));

    const direct = await s.agent('POST', `${P}/reports`, {
      body: { revisions: [{ deployment_id: deploymentId, revision_id: newer, status: 'DEPLOYED', url: 'http://new' }] },
    });
    assert.deepEqual(direct.body.revisions, [{ revision_id: newer, outcome: 'applied' }]);
    assert.equal((await revisionOf(s, deploymentId, newer)).status, 'DEPLOYED');
    assert.equal((await s.api('GET', `/v2/deployments/${deploymentId}`)).body.status, 'READY');
  });

  test("a DEPLOYED revision served at a new address: the report moves the URL (unless custom_url is the user's)", async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId } = await placeDeployment(s);
    await handedOver(s, deploymentId, revisionId);
    const deployedAt = (url: string) =>
      s.agent('POST', `${P}/reports`, { body: { revisions: [{ deployment_id: deploymentId, revision_id: revisionId, status: 'DEPLOYED', url }] } });
    assert.deepEqual((await deployedAt('http://host-a:31001')).body.revisions, [{ revision_id: revisionId, outcome: 'applied' }]);

    const moved = await deployedAt('http://host-a:31002');
    assert.deepEqual(moved.body.revisions, [{ revision_id: revisionId, outcome: 'applied' }]);
    assert.equal((await revisionOf(s, deploymentId, revisionId)).url, 'http://host-a:31002');
    let deployment = (await s.api('GET', `/v2/deployments/${deploymentId}`)).body;
    assert.equal(deployment.source_config.custom_url, 'http://host-a:31002');
    assert.ok(
      (await deployLogs(s, deploymentId, revisionId)).some((line) =>
        /now serves the revision at http:\/\/host-a:31002 \(was http:\/\/host-a:31001\)/.test(line),
      ),
    );
    assert.deepEqual((await deployedAt('http://host-a:31002')).body.revisions, [{ revision_id: revisionId, outcome: 'unchanged' }]);

    // A URL the user set stays theirs; the revision still records where it serves.
    const own = await s.api('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_config: { custom_url: 'https://agents.example.com/support' } } });
    assert.equal(own.status, 200, own.text);
    assert.deepEqual((await deployedAt('http://host-b:31003')).body.revisions, [{ revision_id: revisionId, outcome: 'applied' }]);
    deployment = (await s.api('GET', `/v2/deployments/${deploymentId}`)).body;
    assert.equal(deployment.source_config.custom_url, 'https://agents.example.com/support');
    assert.equal((await revisionOf(s, deploymentId, revisionId)).url, 'http://host-b:31003');
  });

  test('DEPLOY_FAILED carries the reason a person needs', async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId } = await placeDeployment(s);
    await handedOver(s, deploymentId, revisionId);
    const failed = await s.agent('POST', `${P}/reports`, {
      body: { revisions: [{ deployment_id: deploymentId, revision_id: revisionId, status: 'DEPLOY_FAILED', message: 'image pull failed: manifest unknown' }] },
    });
    assert.deepEqual(failed.body.revisions, [{ revision_id: revisionId, outcome: 'applied' }]);
    const revision = await revisionOf(s, deploymentId, revisionId);
    assert.equal(revision.status, 'DEPLOY_FAILED');
    assert.match(revision.status_message, /image pull failed: manifest unknown/);
    assert.match(revision.status_message, new RegExp(s.listenerId));
    assert.equal((await s.api('GET', `/v2/deployments/${deploymentId}`)).body.status, 'UNUSED');
    // Nothing to run any more: the deployment leaves the desired state.
    assert.deepEqual((await s.agent('GET', `${P}/state`)).body.deployments, []);
  });

  test('a delete waits for the listener: it appears in deletions, and the report finishes it', async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId } = await placeDeployment(s);
    await handedOver(s, deploymentId, revisionId);
    await s.agent('POST', `${P}/reports`, {
      body: { revisions: [{ deployment_id: deploymentId, revision_id: revisionId, status: 'DEPLOYED', url: 'http://a' }] },
    });
    const before = (await s.agent('GET', `${P}/state`)).body.generation as number;

    assert.equal((await s.api('DELETE', `/v2/deployments/${deploymentId}`)).status, 204);
    const state = await s.agent('GET', `${P}/state?since=${before}&wait=10`);
    assert.ok(state.body.generation > before);
    assert.deepEqual(state.body.deployments, []);
    assert.equal(state.body.deletions.length, 1);
    assert.equal(state.body.deletions[0].deployment_id, deploymentId);
    assert.ok('namespace' in state.body.deletions[0], 'a deletion says where the deployment ran');
    // The engine leaves it to the listener: still there, and the listener cannot be deleted.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await s.api('GET', `/v2/deployments/${deploymentId}`)).status, 200);
    assert.equal((await s.api('DELETE', `/v2/listeners/${s.listenerId}`)).status, 409);

    const done = await s.agent('POST', `${P}/reports`, { body: { deletions: [{ deployment_id: deploymentId }] } });
    assert.deepEqual(done.body.deletions, [{ deployment_id: deploymentId, outcome: 'applied' }]);
    await eventually(async () => (await s.api('GET', `/v2/deployments/${deploymentId}`)).status === 404, 'the deployment to be gone');
    const again = await s.agent('POST', `${P}/reports`, { body: { deletions: [{ deployment_id: deploymentId }] } });
    assert.deepEqual(again.body.deletions, [{ deployment_id: deploymentId, outcome: 'unchanged' }]);
    assert.deepEqual((await s.agent('GET', `${P}/state`)).body.deletions, []);
    assert.equal((await s.api('DELETE', `/v2/listeners/${s.listenerId}`)).status, 204);
    // Its key went with it (on another server process within the key cache's lifetime it may still
    // authenticate, and then finds no listener).
    const gone = await s.agent('GET', `${P}/state`);
    assert.ok(gone.status === 401 || (gone.status === 404 && gone.body.code === 'listener_not_found'), gone.text);
  });

  test('a long poll alone shows the listener ONLINE: an agent busy polling needs no heartbeats', async () => {
    const s = await setup(ctx());
    assert.equal((await s.api('GET', `/v2/listeners/${s.listenerId}`)).body.status, 'OFFLINE');
    const first = await s.agent('GET', `${P}/state`);
    const polling = s.agent('GET', `${P}/state?since=${first.body.generation}&wait=2`);
    await eventually(async () => (await s.api('GET', `/v2/listeners/${s.listenerId}`)).body.status === 'ONLINE', 'the polling listener to show ONLINE');
    assert.equal((await polling).status, 200);
  });

  test('a heartbeat records the version and shows the listener ONLINE', async () => {
    const s = await setup(ctx(), 'podman');
    const fresh = (await s.api('GET', `/v2/listeners/${s.listenerId}`)).body;
    assert.equal(fresh.compute_type, 'podman');
    assert.equal(fresh.status, 'OFFLINE');
    assert.equal(fresh.last_seen_at, null);
    const beat = await s.agent('POST', `${P}/heartbeat`, { body: { version: 'berth-listener 0.1.0' } });
    assert.equal(beat.status, 200, beat.text);
    assert.equal(beat.body.listener_id, s.listenerId);
    assert.ok(beat.body.heartbeat_interval_seconds > 0 && beat.body.offline_after_seconds > beat.body.heartbeat_interval_seconds);
    // An agent that only long-polls (each poll at most MAX_STATE_WAIT_SECONDS) never looks OFFLINE between polls.
    assert.ok(beat.body.offline_after_seconds > MAX_STATE_WAIT_SECONDS);
    const seen = (await s.api('GET', `/v2/listeners/${s.listenerId}`)).body;
    assert.equal(seen.status, 'ONLINE');
    assert.equal(seen.version, 'berth-listener 0.1.0');
    assert.match(seen.last_seen_at, /^\d{4}-\d{2}-\d{2}T/);
    // A container host has no namespaces: deployments are placed on it all the same.
    const { deploymentId, revisionId } = await placeDeployment(s);
    await handedOver(s, deploymentId, revisionId);
    assert.equal((await s.agent('GET', `${P}/state`)).body.deployments[0].namespace, null);
  });

  test('a listener that stays silent past the deploy timeout fails the revision, without the engine spinning', async () => {
    const s = await setup(ctx());
    const { deploymentId, revisionId } = await placeDeployment(s, { deployTimeout: 1 });
    await handedOver(s, deploymentId, revisionId);
    const engine = ctx().server.berth.engine;
    assert.ok(engine);
    const claimsBefore = engine.claims;
    const failed = await eventually(async () => {
      const revision = await revisionOf(s, deploymentId, revisionId);
      return revision.status === 'DEPLOY_FAILED' ? revision : undefined;
    }, 'the silent handover to fail');
    assert.match(failed.status_message, new RegExp(`listener ${s.listenerId} did not report DEPLOYED within 1 s; never seen`));
    assert.ok(engine.claims - claimsBefore <= 1, `the engine claimed the deployment ${engine.claims - claimsBefore} times while it waited`);
    // A late report is fenced.
    const late = await s.agent('POST', `${P}/reports`, { body: { revisions: [{ deployment_id: deploymentId, revision_id: revisionId, status: 'DEPLOYED' }] } });
    assert.deepEqual(late.body.revisions, [{ revision_id: revisionId, outcome: 'fenced' }]);
    // Berth gave up on it: one row of its own, in the deployment's workspace; the fenced report adds none.
    const audit = await ctx().api('GET', `/v1/audit-log?target_id=${revisionId}`, { tenant: s.workspaceId });
    assert.deepEqual(
      audit.body.resources.map((row: { action: string; actor: { type: string; reason: string } }) => [row.action, row.actor.type, row.actor.reason]),
      [['revision.interrupt', 'berth', `listener ${s.listenerId} did not report DEPLOYED within 1 s`]],
    );
  });
});
