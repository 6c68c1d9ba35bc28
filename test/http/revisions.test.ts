import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { RevisionStatus } from '../../src/domain/revision-status.js';
import { type GitIntegrationFixture, gitIntegration } from '../support/codehost.js';
import { type Client, client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants, type SuiteContext } from '../support/suite.js';
import { assertIssue, type Body, DEFAULT_RESOURCE_SPEC, ISO, stopEngine, UNKNOWN_ID, UUID } from '../support/deployments.js';

const uniqueName = (prefix = 'rev') => `${prefix}-${randomUUID().slice(0, 8)}`;
const secret = (name = 'OPENAI_API_KEY') => ({ name, value: `sv-${randomUUID()}` });

async function createDeployment(api: Client, overrides: Body = {}): Promise<Body> {
  const res = await api('POST', '/v2/deployments', {
    body: {
      name: uniqueName(),
      source: 'external_docker',
      source_config: { resource_spec: {} },
      source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
      secrets: [secret()],
      ...overrides,
    },
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function createGithubDeployment(api: Client, integration: GitIntegrationFixture): Promise<Body> {
  return createDeployment(api, {
    source: 'github',
    source_config: { integration_id: integration.integrationId, repo_url: integration.repoUrl, deployment_type: 'dev' },
    source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json', image_uri: null },
  });
}

async function patchImage(api: Client, id: string, image: string): Promise<Body> {
  const res = await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: image } } });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function listRevisions(api: Client, id: string, query = 'limit=100') {
  const res = await api('GET', `/v2/deployments/${id}/revisions?${query}`);
  assert.equal(res.status, 200, `${query}: ${res.text}`);
  return res.body as { resources: Body[]; offset: number };
}

async function setRevisionStatus(ctx: SuiteContext, revisionId: string, status: RevisionStatus): Promise<void> {
  await ctx.server.berth.db.updateTable('revisions').set({ status }).where('id', '=', revisionId).execute();
}

describeOnEachDatabase('revisions', (ctx) => {
  // The API on its own: a running engine would move revisions out of CREATING while tests look (deletion, with the engine, is in deployments-delete.test.ts).
  before(() => stopEngine(ctx()));
  let integration: GitIntegrationFixture;
  before(async () => {
    integration = await gitIntegration(ctx().api);
  });
  after(async () => integration.remove());

  // ---------------------------------------------------------------- list

  test('list is newest first by revision_number; resources[0] is the latest revision', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    for (const tag of ['v2', 'v3', 'v4']) await patchImage(api, d.id, `registry.example.com/agent:${tag}`);
    const latest = (await api('GET', `/v2/deployments/${d.id}`)).body;

    const all = await listRevisions(api, d.id);
    assert.deepEqual(Object.keys(all).sort(), ['offset', 'resources']);
    assert.deepEqual(
      all.resources.map((r) => r.revision_number),
      [4, 3, 2, 1],
    );
    assert.deepEqual(
      all.resources.map((r) => r.source_revision_config.image_uri),
      ['v4', 'v3', 'v2', 'v1'].map((tag) => `registry.example.com/agent:${tag}`),
    );
    assert.equal(all.resources[0]!.id, latest.latest_revision_id);
    assert.equal(all.resources.at(-1)!.id, d.latest_revision_id);
    assert.equal(all.offset, 4);
    assert.ok(all.resources.every((r) => r.deployment_id === d.id));
    for (let i = 1; i < all.resources.length; i++) {
      assert.ok(all.resources[i - 1]!.created_at >= all.resources[i]!.created_at, 'created_at descending');
    }

    const defaults = await listRevisions(api, d.id, '');
    assert.equal(defaults.resources.length, 4);
    assert.equal(defaults.offset, 4);
  });

  test('list pagination: limit and offset; offset = request offset + items returned; bounds are 422', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    for (const tag of ['v2', 'v3', 'v4', 'v5']) await patchImage(api, d.id, `registry.example.com/agent:${tag}`);

    const one = await listRevisions(api, d.id, 'limit=1');
    assert.deepEqual(
      one.resources.map((r) => r.revision_number),
      [5],
    );
    assert.equal(one.offset, 1);
    const first = await listRevisions(api, d.id, 'limit=2');
    assert.deepEqual(
      first.resources.map((r) => r.revision_number),
      [5, 4],
    );
    assert.equal(first.offset, 2);
    const second = await listRevisions(api, d.id, `limit=2&offset=${first.offset}`);
    assert.deepEqual(
      second.resources.map((r) => r.revision_number),
      [3, 2],
    );
    assert.equal(second.offset, 4);
    const third = await listRevisions(api, d.id, `limit=2&offset=${second.offset}`);
    assert.deepEqual(
      third.resources.map((r) => r.revision_number),
      [1],
    );
    assert.equal(third.offset, 5);
    assert.deepEqual(await listRevisions(api, d.id, 'limit=10&offset=10'), { resources: [], offset: 10 });

    for (const limit of ['0', '101']) assertIssue(await api('GET', `/v2/deployments/${d.id}/revisions?limit=${limit}`), ['query', 'limit']);
    assertIssue(await api('GET', `/v2/deployments/${d.id}/revisions?offset=-1`), ['query', 'offset']);
    assertIssue(await api('GET', `/v2/deployments/${d.id}/revisions?limit=ten`), ['query', 'limit'], 'int_parsing');
  });

  test('list status filter: comma list and %2C; an invalid status is 422', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    const r2 = (await patchImage(api, d.id, 'registry.example.com/agent:v2')).latest_revision_id;
    const r3 = (await patchImage(api, d.id, 'registry.example.com/agent:v3')).latest_revision_id;
    await setRevisionStatus(ctx(), d.latest_revision_id, 'DEPLOYED');
    await setRevisionStatus(ctx(), r2, 'DEPLOY_FAILED');
    const ids = async (query: string) => (await listRevisions(api, d.id, query)).resources.map((r) => r.id);

    assert.deepEqual(await ids('status=CREATING'), [r3]);
    assert.deepEqual(await ids('status=DEPLOYED'), [d.latest_revision_id]);
    assert.deepEqual(await ids('status=CREATING,DEPLOYED'), [r3, d.latest_revision_id]);
    assert.deepEqual(await ids('status=CREATING%2CDEPLOYED'), [r3, d.latest_revision_id]);
    assert.deepEqual(await ids('limit=10&offset=0&status=DEPLOYED%2CDEPLOY_FAILED'), [r2, d.latest_revision_id]);
    assert.deepEqual(await ids('status=SKIPPED'), []);
    const page = await listRevisions(api, d.id, 'limit=1&status=DEPLOYED,DEPLOY_FAILED,CREATING');
    assert.deepEqual(
      page.resources.map((r) => r.id),
      [r3],
    );
    assert.equal(page.offset, 1);

    const invalid = await api('GET', `/v2/deployments/${d.id}/revisions?status=CREATING,REPLACED`);
    assert.equal(invalid.status, 422, invalid.text);
    assert.deepEqual(invalid.body.detail[0].loc.slice(0, 2), ['query', 'status']);
    assert.equal(invalid.body.detail[0].type, 'enum');
  });

  test('list of an unknown deployment is 404 with the Deployment ID text; a non-UUID id is 422', async () => {
    const { api } = ctx();
    const unknown = await api('GET', `/v2/deployments/${UNKNOWN_ID}/revisions`);
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });
    assertIssue(await api('GET', '/v2/deployments/not-a-uuid/revisions'), ['path', 'deployment_id'], 'uuid_parsing');
  });

  // ---------------------------------------------------------------- get

  test('get answers the revision with its fields; status CREATING while no engine runs', async () => {
    const { api } = ctx();
    const d = await createGithubDeployment(api, integration);
    const res = await api('GET', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`);
    assert.equal(res.status, 200, res.text);
    const r = res.body;
    assert.equal(r.id, d.latest_revision_id);
    assert.equal(r.deployment_id, d.id);
    assert.equal(r.revision_number, 1);
    assert.equal(r.status, 'CREATING');
    assert.equal(r.status_message, null);
    assert.equal(r.source, 'github');
    assert.equal(r.source_revision_config.repo_ref, 'main');
    assert.equal(r.source_revision_config.graph_config_path, 'langgraph.json');
    assert.equal(r.source_revision_config.langgraph_config_path, 'langgraph.json');
    assert.equal(r.source_revision_config.image_uri, null);
    assert.equal(r.source_revision_config.repo_commit_sha, null);
    assert.equal(r.source_revision_config.tracked_packages, null);
    assert.deepEqual(r.resource_spec, DEFAULT_RESOURCE_SPEC);
    assert.match(r.created_at, ISO);
    assert.match(r.updated_at, ISO);
    assert.equal(r.secrets, undefined, 'a revision does not carry secret values');

    const listed = await listRevisions(api, d.id);
    assert.deepEqual(listed.resources[0], r);
  });

  test('get: unknown revision, a revision of another deployment, and non-UUID ids', async () => {
    const { api } = ctx();
    const a = await createDeployment(api);
    const b = await createDeployment(api);
    const unknown = await api('GET', `/v2/deployments/${a.id}/revisions/${UNKNOWN_ID}`);
    assert.equal(unknown.status, 404);
    assert.equal(typeof unknown.body.detail, 'string');
    const crossed = await api('GET', `/v2/deployments/${a.id}/revisions/${b.latest_revision_id}`);
    assert.equal(crossed.status, 404, crossed.text);
    assert.equal(typeof crossed.body.detail, 'string');
    const unknownDeployment = await api('GET', `/v2/deployments/${UNKNOWN_ID}/revisions/${a.latest_revision_id}`);
    assert.equal(unknownDeployment.status, 404);
    assert.deepEqual(unknownDeployment.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });
    assertIssue(await api('GET', `/v2/deployments/${a.id}/revisions/not-a-uuid`), ['path', 'revision_id'], 'uuid_parsing');
  });

  // ---------------------------------------------------------------- create

  test('POST …/revisions creates a CREATING revision that becomes the latest (TF flow)', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    const secrets = [secret('NEW_SECRET')];
    const res = await api('POST', `/v2/deployments/${d.id}/revisions`, {
      body: { source_revision_config: { image_uri: 'registry.example.com/agent:v2' }, secrets },
    });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.id, UUID);
    assert.equal(res.body.status, 'CREATING');
    assert.equal(res.body.deployment_id, d.id);
    assert.equal(res.body.revision_number, 2);
    assert.equal(res.body.source_revision_config.image_uri, 'registry.example.com/agent:v2');
    assert.equal(res.body.secrets, undefined);

    const after = (await api('GET', `/v2/deployments/${d.id}`)).body;
    assert.equal(after.latest_revision_id, res.body.id);
    assert.equal(after.source_revision_config.image_uri, 'registry.example.com/agent:v2');
    assert.deepEqual(after.secrets, secrets);
    assert.deepEqual((await api('GET', `/v2/deployments/${d.id}/revisions/${res.body.id}`)).body, res.body);
    assert.equal((await listRevisions(api, d.id, 'limit=1')).resources[0]!.id, res.body.id);
  });

  test('POST …/revisions with no fields copies the latest configuration into a new revision', async () => {
    const { api } = ctx();
    const d = await createDeployment(api, { source_config: { resource_spec: { max_scale: 3 } } });
    const res = await api('POST', `/v2/deployments/${d.id}/revisions`, { body: {} });
    assert.equal(res.status, 201, res.text);
    assert.notEqual(res.body.id, d.latest_revision_id);
    assert.equal(res.body.revision_number, 2);
    assert.deepEqual(res.body.source_revision_config, d.source_revision_config);
    assert.deepEqual(res.body.resource_spec, { ...DEFAULT_RESOURCE_SPEC, max_scale: 3 });
    const after = (await api('GET', `/v2/deployments/${d.id}`)).body;
    assert.equal(after.latest_revision_id, res.body.id);
    assert.deepEqual(after.secrets, d.secrets);

    const nulls = await api('POST', `/v2/deployments/${d.id}/revisions`, {
      body: { source_revision_config: null, source_config: null, secrets: null, tracked_packages: null },
    });
    assert.equal(nulls.status, 201, nulls.text);
    assert.equal(nulls.body.revision_number, 3);
    const emptySecrets = await api('POST', `/v2/deployments/${d.id}/revisions`, { body: { secrets: [] } });
    assert.equal(emptySecrets.status, 201, emptySecrets.text);
    assert.deepEqual((await api('GET', `/v2/deployments/${d.id}`)).body.secrets, d.secrets, 'secrets: [] keeps the secrets');

    // No body and no content type at all, as a bare `curl -X POST` sends it.
    const bare = await api('POST', `/v2/deployments/${d.id}/revisions`);
    assert.equal(bare.status, 201, bare.text);
    assert.equal(bare.body.revision_number, 5);
  });

  test('POST …/revisions: resources, tracked packages and validation', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    const res = await api('POST', `/v2/deployments/${d.id}/revisions`, {
      body: {
        source_revision_config: { image_uri: 'registry.example.com/agent:v3' },
        source_config: { resource_spec: { cpu: 2 }, install_command: 'pip install .', build_command: null },
        tracked_packages: ['langgraph:1.0.0'],
        secret_references: [{ name: 'X', secret_name: 'x', secret_key: 'k' }],
      },
    });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.resource_spec, { ...DEFAULT_RESOURCE_SPEC, cpu: 2 });
    assert.deepEqual(res.body.source_revision_config.tracked_packages, ['langgraph:1.0.0']);
    const after = (await api('GET', `/v2/deployments/${d.id}`)).body;
    assert.deepEqual(after.source_config.resource_spec, { ...DEFAULT_RESOURCE_SPEC, cpu: 2 });
    assert.equal(after.source_config.install_command, 'pip install .');

    const codeFields = await api('POST', `/v2/deployments/${d.id}/revisions`, { body: { source_revision_config: { repo_ref: 'main' } } });
    assert.equal(codeFields.status, 400, codeFields.text);
    const duplicate = await api('POST', `/v2/deployments/${d.id}/revisions`, { body: { secrets: [secret('A'), secret('A')] } });
    assert.equal(duplicate.status, 400, duplicate.text);
    const reserved = await api('POST', `/v2/deployments/${d.id}/revisions`, { body: { secrets: [secret('LANGCHAIN_API_KEY')] } });
    assert.equal(reserved.status, 400, reserved.text);
    assertIssue(await api('POST', `/v2/deployments/${d.id}/revisions`, { body: { secrets: 'x' } }), ['body', 'secrets']);
    assert.equal((await listRevisions(api, d.id)).resources.length, 2, 'failed attempts made no revision');

    const unknown = await api('POST', `/v2/deployments/${UNKNOWN_ID}/revisions`, { body: {} });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });
  });

  // ---------------------------------------------------------------- interruption and redeploy

  test('redeploy of an in-progress revision is 400; after interruption it creates a new latest revision from the old one', async () => {
    const { api } = ctx();
    const oldSecrets = [secret('OLD_ONLY'), secret('SHARED')];
    const d = await createDeployment(api, { secrets: oldSecrets, source_config: { resource_spec: { max_scale: 2 } } });
    const r1 = d.latest_revision_id;
    const newSecrets = [secret('NEW_ONLY')];
    const v2 = await api('PATCH', `/v2/deployments/${d.id}`, {
      body: { source_revision_config: { image_uri: 'registry.example.com/agent:v2' }, secrets: newSecrets, source_config: { resource_spec: { max_scale: 5 } } },
    });
    assert.equal(v2.status, 200, v2.text);
    const r2 = v2.body.latest_revision_id;

    // Redeploy takes no body and no Content-Type.
    const inProgress = await api('POST', `/v2/deployments/${d.id}/revisions/${r1}/redeploy`);
    assert.equal(inProgress.status, 400, inProgress.text);
    assert.equal(typeof inProgress.body.detail, 'string');

    const interrupted = await api('POST', `/v2/deployments/${d.id}/revisions/${r1}/interruption`);
    assert.equal(interrupted.status, 200, interrupted.text);
    assert.equal(interrupted.body.id, r1);
    assert.equal(interrupted.body.status, 'INTERRUPTED');
    const again = await api('POST', `/v2/deployments/${d.id}/revisions/${r1}/interruption`);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.status, 'INTERRUPTED');
    assert.equal((await api('GET', `/v2/deployments/${d.id}/revisions/${r1}`)).body.status, 'INTERRUPTED');

    const redeployed = await api('POST', `/v2/deployments/${d.id}/revisions/${r1}/redeploy`);
    assert.equal(redeployed.status, 200, redeployed.text);
    const dep = redeployed.body;
    assert.equal(dep.id, d.id, 'redeploy answers the deployment');
    assert.match(dep.latest_revision_id, UUID);
    assert.notEqual(dep.latest_revision_id, r1);
    assert.notEqual(dep.latest_revision_id, r2);
    assert.equal(dep.source_revision_config.image_uri, 'registry.example.com/agent:v1');
    assert.deepEqual(dep.secrets, oldSecrets);
    assert.deepEqual(dep.source_config.resource_spec, { ...DEFAULT_RESOURCE_SPEC, max_scale: 2 });

    const newest = await api('GET', `/v2/deployments/${d.id}/revisions/${dep.latest_revision_id}`);
    assert.equal(newest.status, 200);
    assert.equal(newest.body.revision_number, 3);
    assert.equal(newest.body.status, 'CREATING');
    assert.equal(newest.body.source_revision_config.image_uri, 'registry.example.com/agent:v1');
    assert.deepEqual(
      (await listRevisions(api, d.id)).resources.map((r) => r.id),
      [dep.latest_revision_id, r2, r1],
    );
    assert.deepEqual((await api('GET', `/v2/deployments/${d.id}`)).body, dep);
  });

  test('redeploy of a DEPLOYED revision (rollback) works; unknown revision and deployment are 404', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    await patchImage(api, d.id, 'registry.example.com/agent:v2');
    await setRevisionStatus(ctx(), d.latest_revision_id, 'DEPLOYED');
    const rolled = await api('POST', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy`);
    assert.equal(rolled.status, 200, rolled.text);
    assert.equal(rolled.body.source_revision_config.image_uri, 'registry.example.com/agent:v1');
    assert.deepEqual(rolled.body.secrets, d.secrets);

    const unknown = await api('POST', `/v2/deployments/${d.id}/revisions/${UNKNOWN_ID}/redeploy`);
    assert.equal(unknown.status, 404, unknown.text);
    assert.equal(typeof unknown.body.detail, 'string');
    const other = await createDeployment(api);
    await setRevisionStatus(ctx(), other.latest_revision_id, 'DEPLOYED');
    const crossed = await api('POST', `/v2/deployments/${d.id}/revisions/${other.latest_revision_id}/redeploy`);
    assert.equal(crossed.status, 404, crossed.text);
    const unknownDeployment = await api('POST', `/v2/deployments/${UNKNOWN_ID}/revisions/${d.latest_revision_id}/redeploy`);
    assert.equal(unknownDeployment.status, 404);
    assert.deepEqual(unknownDeployment.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });
    assertIssue(await api('POST', `/v2/deployments/${d.id}/revisions/not-a-uuid/redeploy`), ['path', 'revision_id'], 'uuid_parsing');
    assert.equal((await listRevisions(api, d.id)).resources.length, 3);
  });

  test('interruption of a revision in another terminal status is 400; unknown revision is 404', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    for (const status of ['DEPLOYED', 'BUILD_FAILED', 'SKIPPED'] as const) {
      await setRevisionStatus(ctx(), d.latest_revision_id, status);
      const res = await api('POST', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interruption`);
      assert.equal(res.status, 400, `${status}: ${res.text}`);
      assert.equal(typeof res.body.detail, 'string');
      assert.equal((await api('GET', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`)).body.status, status);
    }
    for (const status of ['QUEUED', 'BUILDING', 'DEPLOYING'] as const) {
      await setRevisionStatus(ctx(), d.latest_revision_id, status);
      const res = await api('POST', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/interruption`);
      assert.equal(res.status, 200, `${status}: ${res.text}`);
      assert.equal(res.body.status, 'INTERRUPTED');
      assert.equal(typeof res.body.status_message, 'string');
    }
    const unknown = await api('POST', `/v2/deployments/${d.id}/revisions/${UNKNOWN_ID}/interruption`);
    assert.equal(unknown.status, 404, unknown.text);
    const unknownDeployment = await api('POST', `/v2/deployments/${UNKNOWN_ID}/revisions/${d.latest_revision_id}/interruption`);
    assert.equal(unknownDeployment.status, 404);
  });

  // ---------------------------------------------------------------- security

  // Every revision route against no key, a wrong key, other tenants' keys and an organization key naming no workspace or a foreign one: the generated cases of test/http/openapi.test.ts.
  test('security: an organization key names its workspace to list revisions; nothing changed by strangers', async () => {
    const { api, server } = ctx();
    const d = await createDeployment(api);
    const other = await otherTenants(ctx());
    const base = `/v2/deployments/${d.id}/revisions`;
    // A stranger's attempt to add a revision, answered as for a deployment that does not exist.
    const stranger = await client(server.url, { key: other.otherWorkspaceKey })('POST', base, { body: { source_revision_config: { image_uri: 'evil:1' } } });
    assert.deepEqual(stranger.body, { detail: `Deployment ID ${d.id} not found.`, code: 'deployment_not_found' });
    const orgKey = await api('POST', '/v1/api-keys', { body: { workspace_id: null } });
    const org = client(server.url, { key: orgKey.body.key });
    const noTenant = await org('GET', base);
    assert.equal(noTenant.status, 403);
    assert.match(noTenant.body.detail, /requires workspace specification/);
    assert.equal((await org('GET', base, { headers: { 'X-Tenant-ID': server.workspaceId } })).status, 200);
    assert.equal((await org('GET', base, { tenant: other.otherOrganizationWorkspaceId })).status, 403);

    // Nothing changed.
    const revisions = await listRevisions(api, d.id);
    assert.equal(revisions.resources.length, 1);
    assert.equal(revisions.resources[0]!.status, 'CREATING');
  });

  test('revision routes are served under /api-host', async () => {
    const { api } = ctx();
    const d = await createDeployment(api);
    const listed = await api('GET', `/api-host/v2/deployments/${d.id}/revisions?limit=1`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.resources[0].id, d.latest_revision_id);
    assert.equal((await api('GET', `/api-host/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`)).status, 200);
    const created = await api('POST', `/api-host/v2/deployments/${d.id}/revisions`, { body: {} });
    assert.equal(created.status, 201, created.text);
    const interrupted = await api('POST', `/api-host/v2/deployments/${d.id}/revisions/${created.body.id}/interruption`);
    assert.equal(interrupted.status, 200, interrupted.text);
    const redeployed = await api('POST', `/api-host/v2/deployments/${d.id}/revisions/${created.body.id}/redeploy`);
    assert.equal(redeployed.status, 200, redeployed.text);
  });
});
