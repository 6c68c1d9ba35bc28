import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { type GitIntegrationFixture, gitIntegration } from '../support/codehost.js';
import { type Client, client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants, type SuiteContext } from '../support/suite.js';
import { deadline } from '../support/deadline.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const DEFAULT_RESOURCE_SPEC = { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 2048 };
/**
 * Every secret value in this file starts with this marker, so the last tests can check
 * that no value reached the database in clear or the server's logs.
 */
const MARK = 'S3CR3T-VALUE-';

const secretValue = () => `${MARK}${randomUUID()}`;
const uniqueName = (prefix = 'dep') => `${prefix}-${randomUUID().slice(0, 8)}`;

type Body = Record<string, any>;

/** A self-hosted image deployment as CLI-new sends it (`resource_spec: {}`). */
function dockerBody(overrides: Body = {}): Body {
  return {
    name: uniqueName('img'),
    source: 'external_docker',
    source_config: { resource_spec: {} },
    source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
    secrets: [{ name: 'OPENAI_API_KEY', value: secretValue() }],
    ...overrides,
  };
}

/** The docs / GHA code-host create body (real-clients.md 3.2), explicit nulls included. */
function codehostBody(integration: GitIntegrationFixture, overrides: Body = {}): Body {
  return {
    name: uniqueName('gh'),
    source: 'github',
    source_config: {
      integration_id: integration.integrationId,
      repo_url: integration.repoUrl,
      deployment_type: 'dev',
      build_on_push: false,
      custom_url: null,
      resource_spec: null,
    },
    source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json', image_uri: null },
    secrets: [{ name: 'OPENAI_API_KEY', value: secretValue() }],
    ...overrides,
  };
}

async function createDeployment(api: Client, body: Body = dockerBody()): Promise<Body> {
  const res = await api('POST', '/v2/deployments', { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function revisionsOf(api: Client, deploymentId: string): Promise<Body[]> {
  const res = await api('GET', `/v2/deployments/${deploymentId}/revisions?limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.resources;
}

async function patch(api: Client, id: string, body: Body) {
  return api('PATCH', `/v2/deployments/${id}`, { body });
}

/** A client whose key is bound to a brand-new workspace (for tests that count or place). */
async function freshWorkspace(ctx: SuiteContext): Promise<{ api: Client; workspaceId: string }> {
  const ws = await ctx.api('POST', '/v1/workspaces', { body: { name: `ws-${randomUUID()}` } });
  assert.equal(ws.status, 201, ws.text);
  const key = await ctx.api('POST', '/v1/api-keys', { body: { name: 'deployments', workspace_id: ws.body.id } });
  assert.equal(key.status, 201, key.text);
  return { api: client(ctx.server.url, { key: key.body.key }), workspaceId: ws.body.id };
}

/**
 * The main suites test the API on its own, as the brief assumes ("no engine yet"): a
 * running revision engine would move revisions out of CREATING while tests look at them.
 * Written so it compiles whether or not the server has an engine.
 */
async function stopEngine(ctx: SuiteContext): Promise<void> {
  await (ctx.server.berth as unknown as { engine?: { stop(): Promise<void> } }).engine?.stop();
}

/**
 * After a DELETE the deployment may pass through AWAITING_DELETE (real-clients.md 3.5);
 * GET must answer 404 within the time limit, and nothing but AWAITING_DELETE before that.
 */
async function waitUntilGone(api: Client, id: string, baseMs = 20_000): Promise<void> {
  const limitMs = deadline(baseMs);
  const until = Date.now() + limitMs;
  for (;;) {
    const res = await api('GET', `/v2/deployments/${id}`);
    if (res.status === 404) {
      assert.deepEqual(res.body, { detail: `Deployment ID ${id} not found.`, code: 'deployment_not_found' });
      return;
    }
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'AWAITING_DELETE', 'a deleted deployment shows AWAITING_DELETE until it is gone');
    assert.ok(Date.now() < until, `deployment ${id} still answers 200 ${limitMs} ms after DELETE`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A request exactly as given (fetch will not send a body, even an empty one, with GET). */
function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>, body = '') {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(new URL(path, baseUrl), { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function assertIssue(res: { status: number; body: any; text: string }, loc: (string | number)[], type?: string): void {
  assert.equal(res.status, 422, res.text);
  assert.ok(Array.isArray(res.body.detail), res.text);
  const issue = res.body.detail.find((d: { loc: unknown }) => JSON.stringify(d.loc) === JSON.stringify(loc));
  assert.ok(issue, `expected an issue at ${JSON.stringify(loc)} in ${res.text}`);
  if (type) assert.equal(issue.type, type, res.text);
}

function assertSourceConfigError(res: { status: number; body: any; text: string }, pattern?: RegExp): void {
  assert.equal(res.status, 400, res.text);
  assert.equal(typeof res.body.detail, 'string');
  assert.match(res.body.detail, /^Source configuration error/);
  if (pattern) assert.match(res.body.detail, pattern);
}

describeOnEachDatabase('deployments', (ctx) => {
  // The code-host integration this suite's code-host deployments build from.
  let integration: GitIntegrationFixture;
  const githubBody = (overrides: Body = {}) => codehostBody(integration, overrides);
  before(async () => {
    integration = await gitIntegration(ctx().api);
  });
  after(async () => integration.remove());

  before(() => stopEngine(ctx()));

  // ---------------------------------------------------------------- create

  test('create (github, GHA body) answers 201 with the deployment and its first revision', async () => {
    const { api, server } = ctx();
    const body = githubBody();
    const res = await api('POST', '/v2/deployments', { body });
    assert.equal(res.status, 201, res.text);
    const d = res.body;
    assert.match(d.id, UUID);
    assert.equal(d.tenant_id, server.workspaceId);
    assert.equal(d.name, body.name);
    assert.equal(d.source, 'github', 'the spelling given is echoed');
    assert.match(d.latest_revision_id, UUID);
    assert.equal(d.active_revision_id, null);
    assert.equal(d.status, 'AWAITING_DATABASE');
    assert.equal(d.source_config.integration_id, body.source_config.integration_id);
    assert.equal(d.source_config.repo_url, body.source_config.repo_url);
    assert.equal(d.source_config.deployment_type, 'dev');
    assert.equal(d.source_config.build_on_push, false);
    assert.equal(d.source_config.custom_url, null);
    assert.deepEqual(d.source_config.resource_spec, DEFAULT_RESOURCE_SPEC, 'resource_spec: null gets the defaults');
    assert.equal(d.source_revision_config.repo_ref, 'main');
    assert.equal(d.source_revision_config.graph_config_path, 'langgraph.json');
    assert.equal(d.source_revision_config.langgraph_config_path, 'langgraph.json');
    assert.equal(d.source_revision_config.image_uri, null);
    assert.equal(d.source_revision_config.repo_commit_sha, null);
    assert.deepEqual(d.secrets, body.secrets);
    assert.match(d.created_at, ISO);
    assert.match(d.updated_at, ISO);

    const revisions = await revisionsOf(api, d.id);
    assert.equal(revisions.length, 1);
    assert.equal(revisions[0]!.id, d.latest_revision_id);
  });

  test('create (codehost) keeps the codehost spelling; graph_config_path defaults to langgraph.json', async () => {
    const { api } = ctx();
    const d = await createDeployment(
      api,
      githubBody({
        source: 'codehost',
        source_config: { integration_id: integration.integrationId, repo_url: integration.repoUrl },
        source_revision_config: { repo_ref: 'release' },
      }),
    );
    assert.equal(d.source, 'codehost');
    assert.equal(d.source_config.deployment_type, 'prod', 'deployment_type defaults to prod');
    assert.equal(d.source_revision_config.repo_ref, 'release');
    assert.equal(d.source_revision_config.graph_config_path, 'langgraph.json');
    assert.equal(d.source_revision_config.langgraph_config_path, 'langgraph.json');
  });

  test('create: langgraph_config_path and graph_config_path are one field, answered under both names', async () => {
    const { api } = ctx();
    const viaAlias = await createDeployment(api, githubBody({ source_revision_config: { repo_ref: 'main', langgraph_config_path: 'agents/langgraph.json' } }));
    assert.equal(viaAlias.source_revision_config.graph_config_path, 'agents/langgraph.json');
    assert.equal(viaAlias.source_revision_config.langgraph_config_path, 'agents/langgraph.json');
    const viaCanonical = await createDeployment(
      api,
      githubBody({ source: 'codehost', source_revision_config: { repo_ref: 'main', graph_config_path: 'x/graph.json' } }),
    );
    assert.equal(viaCanonical.source_revision_config.graph_config_path, 'x/graph.json');
    assert.equal(viaCanonical.source_revision_config.langgraph_config_path, 'x/graph.json');
  });

  test('create (external_docker): resource_spec {} and null get the defaults; secrets are echoed', async () => {
    const { api } = ctx();
    const body = dockerBody({
      secrets: [
        { name: 'A', value: secretValue() },
        { name: 'B', value: secretValue() },
      ],
    });
    const d = await createDeployment(api, body);
    assert.equal(d.source, 'external_docker');
    assert.equal(d.source_revision_config.image_uri, 'registry.example.com/agent:v1');
    assert.equal(d.source_revision_config.graph_config_path, null);
    assert.equal(d.source_revision_config.langgraph_config_path, null);
    assert.deepEqual(d.source_config.resource_spec, DEFAULT_RESOURCE_SPEC);
    assert.equal(d.source_config.deployment_type, 'prod');
    assert.deepEqual(d.secrets, body.secrets);

    const withNull = await createDeployment(api, dockerBody({ source_config: { resource_spec: null } }));
    assert.deepEqual(withNull.source_config.resource_spec, DEFAULT_RESOURCE_SPEC);
    const noSourceConfig = await createDeployment(api, dockerBody({ source_config: null }));
    assert.deepEqual(noSourceConfig.source_config.resource_spec, DEFAULT_RESOURCE_SPEC);
    const partial = await createDeployment(api, dockerBody({ source_config: { resource_spec: { max_scale: 3, queue_min_scale: 2 } } }));
    assert.deepEqual(partial.source_config.resource_spec, { ...DEFAULT_RESOURCE_SPEC, max_scale: 3, queue_min_scale: 2 });
  });

  test('create: explicit nulls everywhere are accepted (GHA self-hosted body) and unknown extras are ignored', async () => {
    const { api } = ctx();
    const res = await api('POST', '/v2/deployments', {
      body: {
        name: uniqueName('gha'),
        source: 'external_docker',
        source_config: {
          integration_id: null,
          repo_url: null,
          deployment_type: 'dev_free',
          build_on_push: null,
          custom_url: null,
          resource_spec: { min_scale: 1, max_scale: 2, cpu: 2, memory_mb: 4096, queue_min_scale: null, service_account_name: null },
          listener_id: null,
          listener_config: null,
          install_command: null,
          build_command: null,
        },
        source_revision_config: { repo_ref: null, langgraph_config_path: null, graph_config_path: null, image_uri: 'docker.io/acme/agent:1.0' },
        secrets: [],
        image_version: null,
        env_vars: [],
        route_through_gateway: true,
        secret_references: [{ name: 'DB_PASSWORD', secret_name: 'db', secret_key: 'password' }],
      },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.source_config.deployment_type, 'dev_free');
    assert.deepEqual(res.body.source_config.resource_spec, { min_scale: 1, max_scale: 2, cpu: 2, memory_mb: 4096 });
    assert.equal(res.body.source_config.listener_id, null);
    assert.equal(res.body.source_config.listener_config, null);
    assert.deepEqual(res.body.secrets, []);
    assert.equal(res.body.env_vars, undefined);
    assert.match(res.body.latest_revision_id, UUID);
  });

  test('create (code host) without integration_id or repo_url is a 400 source configuration error', async () => {
    const { api } = ctx();
    const base = githubBody();
    const noIntegration = await api('POST', '/v2/deployments', {
      body: { ...base, source_config: { ...base.source_config, integration_id: null } },
    });
    assertSourceConfigError(noIntegration, /integration_id/);
    const noRepo = await api('POST', '/v2/deployments', {
      body: { ...base, source: 'codehost', source_config: { integration_id: randomUUID() } },
    });
    assertSourceConfigError(noRepo, /repo_url/);

    const notUuid = await api('POST', '/v2/deployments', {
      body: { ...base, source_config: { ...base.source_config, integration_id: 'not-a-uuid' } },
    });
    assertIssue(notUuid, ['body', 'source_config', 'integration_id'], 'uuid_parsing');
    // Nothing was created by the failed attempts.
    assert.equal((await api('GET', `/v2/deployments?name=${base.name}`)).body.resources.length, 0);
  });

  test("create (code host): repo_ref defaults to the default branch; the integration and repository must be the workspace's", async () => {
    const { api } = ctx();
    const base = githubBody();
    const noRef = await createDeployment(api, { ...base, source_revision_config: { repo_ref: null, langgraph_config_path: 'langgraph.json' } });
    assert.equal(noRef.source_revision_config.repo_ref, integration.defaultBranch);
    const emptyRevisionConfig = await createDeployment(api, { ...githubBody(), source_revision_config: {} });
    assert.equal(emptyRevisionConfig.source_revision_config.repo_ref, integration.defaultBranch);

    const unknown = randomUUID();
    const noSuchIntegration = await api('POST', '/v2/deployments', { body: githubBody({ source_config: { ...base.source_config, integration_id: unknown } }) });
    assert.equal(noSuchIntegration.status, 404, noSuchIntegration.text);
    assert.deepEqual(noSuchIntegration.body, { detail: `Integration ID ${unknown} not found.`, code: 'integration_not_found' });

    const otherRepo = await api('POST', '/v2/deployments', {
      body: githubBody({ source_config: { ...base.source_config, repo_url: 'https://user:hunter2@git.example/acme/other.git' } }),
    });
    assert.equal(otherRepo.status, 400, otherRepo.text);
    assert.match(otherRepo.body.detail, /repository 'https:\/\/git\.example\/acme\/other\.git' is not one of integration/);
    assert.ok(!otherRepo.text.includes('hunter2'), 'credentials in a repository URL are never echoed');

    // Another workspace's integration is as absent as an unknown one.
    const { otherWorkspaceKey } = await otherTenants(ctx());
    const other = client(ctx().server.url, { key: otherWorkspaceKey });
    const foreign = await other('POST', '/v2/deployments', { body: githubBody() });
    assert.equal(foreign.status, 404, foreign.text);
    assert.deepEqual(foreign.body, { detail: `Integration ID ${integration.integrationId} not found.`, code: 'integration_not_found' });
  });

  test('create (external_docker) without image_uri is a 400 source configuration error', async () => {
    const { api } = ctx();
    for (const source_revision_config of [{}, { image_uri: null }, null]) {
      const res = await api('POST', '/v2/deployments', { body: dockerBody({ source_revision_config }) });
      assertSourceConfigError(res, /image_uri/);
    }
  });

  test('create without secrets is 422 at body.secrets (type missing)', async () => {
    const { api } = ctx();
    const { secrets: _omitted, ...body } = dockerBody();
    const res = await api('POST', '/v2/deployments', { body });
    assertIssue(res, ['body', 'secrets'], 'missing');
  });

  test('create with wrong types is 422 at the field', async () => {
    const { api } = ctx();
    assertIssue(await api('POST', '/v2/deployments', { body: dockerBody({ name: 5 }) }), ['body', 'name'], 'string_type');
    assertIssue(await api('POST', '/v2/deployments', { body: dockerBody({ secrets: 'x' }) }), ['body', 'secrets'], 'list_type');
    assertIssue(
      await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { build_on_push: 'yes' } }) }),
      ['body', 'source_config', 'build_on_push'],
      'bool_type',
    );
    assertIssue(
      await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { resource_spec: { cpu: 'two' } } }) }),
      ['body', 'source_config', 'resource_spec', 'cpu'],
      'float_type',
    );
    const malformed = await api('POST', '/v2/deployments', { rawBody: '{"name": ' });
    assertIssue(malformed, ['body', malformed.body.detail[0].loc[1]], 'json_invalid');
  });

  test('create with an invalid name (underscore, leading digit, empty) is 422 at body.name', async () => {
    const { api } = ctx();
    for (const name of ['my_app', '1app', '', '-app']) {
      const res = await api('POST', '/v2/deployments', { body: dockerBody({ name }) });
      assertIssue(res, ['body', 'name']);
    }
  });

  test('create with an unknown source is 422 at body.source', async () => {
    const { api } = ctx();
    const res = await api('POST', '/v2/deployments', { body: dockerBody({ source: 'gitlab' }) });
    assertIssue(res, ['body', 'source'], 'enum');
  });

  test('a duplicate name in the workspace is 409 "already exists"; another workspace may use it', async () => {
    const { api } = ctx();
    const body = dockerBody();
    await createDeployment(api, body);
    const again = await api('POST', '/v2/deployments', { body: { ...body, secrets: [] } });
    assert.equal(again.status, 409, again.text);
    assert.equal(typeof again.body.detail, 'string');
    assert.match(again.body.detail, /already exists/);
    assert.equal((await api('GET', `/v2/deployments?name=${body.name}`)).body.resources.length, 1);

    const other = await freshWorkspace(ctx());
    const elsewhere = await createDeployment(other.api, { ...body, secrets: [] });
    assert.equal(elsewhere.name, body.name);
    assert.equal(elsewhere.tenant_id, other.workspaceId);
  });

  test('duplicate and reserved secret names are 400 and the detail never shows the value', async () => {
    const { api } = ctx();
    const value = secretValue();
    const duplicate = await api('POST', '/v2/deployments', {
      body: dockerBody({
        secrets: [
          { name: 'TOKEN', value },
          { name: 'TOKEN', value: `${value}-2` },
        ],
      }),
    });
    assert.equal(duplicate.status, 400, duplicate.text);
    assert.equal(typeof duplicate.body.detail, 'string');
    assert.match(duplicate.body.detail, /TOKEN/);
    assert.ok(!duplicate.text.includes(value), duplicate.text);

    for (const name of ['LANGCHAIN_API_KEY', 'POSTGRES_URI', 'LANGSMITH_TENANT_ID']) {
      const reserved = await api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ name, value }] }) });
      assert.equal(reserved.status, 400, reserved.text);
      assert.equal(typeof reserved.body.detail, 'string');
      assert.match(reserved.body.detail, new RegExp(name));
      assert.ok(!reserved.text.includes(value), reserved.text);
    }
  });

  test('422 answers never echo a secret value either', async () => {
    const { api } = ctx();
    const value = secretValue();
    const created = await createDeployment(api);
    const attempts: [string, () => ReturnType<Client>][] = [
      // FastAPI-style `input` of a missing top-level field is the whole body.
      [
        'POST without name',
        () => {
          const { name: _n, ...body } = dockerBody({ secrets: [{ name: 'TOKEN', value }] });
          return api('POST', '/v2/deployments', { body });
        },
      ],
      // `input` of a secret entry without a name is the entry, value included.
      ['POST secret without name', () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ value }] }) })],
      ['POST secret with an invalid name', () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ name: 'not valid', value }] }) })],
      ['POST name: 5 with secrets', () => api('POST', '/v2/deployments', { body: dockerBody({ name: 5, secrets: [{ name: 'TOKEN', value }] }) })],
      // `input` of an over-long value is the value itself.
      [
        'POST secret value over 65536 characters',
        () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: [{ name: 'BIG', value: value.padEnd(70000, 'x') }] }) }),
      ],
      // `input` of an over-long list is the whole list.
      [
        'POST 201 secrets',
        () => api('POST', '/v2/deployments', { body: dockerBody({ secrets: Array.from({ length: 201 }, (_, i) => ({ name: `S${i}`, value })) }) }),
      ],
      ['PATCH secret without name', () => patch(api, created.id, { secrets: [{ value }] })],
      ['PATCH display_name "" with secrets', () => patch(api, created.id, { display_name: '', secrets: [{ name: 'TOKEN', value }] })],
    ];
    const leaks: string[] = [];
    for (const [label, attempt] of attempts) {
      const res = await attempt();
      assert.equal(res.status, 422, `${label}: ${res.text.slice(0, 500)}`);
      if (res.text.includes(value)) leaks.push(`${label}: ${res.text.slice(0, 400)}`);
    }
    assert.deepEqual(leaks, [], 'these 422 answers echo the secret value');
  });

  // ---------------------------------------------------------------- get

  test('get answers the deployment; unknown id is 404; a non-UUID id is 422 uuid_parsing', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const got = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, created);

    const unknown = await api('GET', `/v2/deployments/${UNKNOWN_ID}`);
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });

    const malformed = await api('GET', '/v2/deployments/not-a-uuid');
    assertIssue(malformed, ['path', 'deployment_id'], 'uuid_parsing');
  });

  test('GET and DELETE with Content-Type: application/json and an empty body work (RUST client)', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const json = { 'Content-Type': 'application/json' };
    const get = await api('GET', `/v2/deployments/${created.id}`, { headers: json });
    assert.equal(get.status, 200, get.text);
    // fetch refuses a body on GET, so send `Content-Length: 0` with node:http.
    const getEmpty = await rawRequest(ctx().server.url, 'GET', `/v2/deployments/${created.id}`, {
      'Content-Type': 'application/json',
      'Content-Length': '0',
      'X-Api-Key': ctx().server.adminKey,
    });
    assert.equal(getEmpty.status, 200, getEmpty.text);
    const list = await api('GET', '/v2/deployments', { headers: json });
    assert.equal(list.status, 200, list.text);
    const del = await api('DELETE', `/v2/deployments/${created.id}`, { rawBody: '' });
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');

    const other = await createDeployment(api);
    const delNoBody = await api('DELETE', `/v2/deployments/${other.id}`, { headers: json });
    assert.equal(delNoBody.status, 204, delNoBody.text);
  });

  test('a deployment id in upper case names the same deployment (UUIDs are case-insensitive)', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const got = await api('GET', `/v2/deployments/${created.id.toUpperCase()}`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.id, created.id);
  });

  // ---------------------------------------------------------------- list

  test('list: envelope, newest first, default limit 20, offset = request offset + items returned', async () => {
    const { api } = await freshWorkspace(ctx());
    assert.deepEqual((await api('GET', '/v2/deployments')).body, { resources: [], offset: 0 });

    const created: Body[] = [];
    for (let i = 0; i < 22; i++) created.push(await createDeployment(api, dockerBody({ name: `app-${String(i).padStart(2, '0')}` })));
    const newestFirst = created.map((d) => d.id).reverse();

    const page1 = await api('GET', '/v2/deployments');
    assert.equal(page1.status, 200, page1.text);
    assert.deepEqual(Object.keys(page1.body).sort(), ['offset', 'resources']);
    assert.equal(page1.body.resources.length, 20, 'default limit is 20');
    assert.equal(page1.body.offset, 20);
    assert.deepEqual(
      page1.body.resources.map((d: Body) => d.id),
      newestFirst.slice(0, 20),
    );
    assert.deepEqual(page1.body.resources[0], created[21], 'list items are full deployments');

    const page2 = await api('GET', `/v2/deployments?offset=${page1.body.offset}`);
    assert.deepEqual(
      page2.body.resources.map((d: Body) => d.id),
      newestFirst.slice(20),
    );
    assert.equal(page2.body.offset, 22);

    const small = await api('GET', '/v2/deployments?limit=5&offset=3');
    assert.deepEqual(
      small.body.resources.map((d: Body) => d.id),
      newestFirst.slice(3, 8),
    );
    assert.equal(small.body.offset, 8);
    assert.deepEqual((await api('GET', '/v2/deployments?limit=100&offset=50')).body, { resources: [], offset: 50 });
    assert.equal((await api('GET', '/v2/deployments?limit=100')).body.resources.length, 22);
  });

  test('list: limit=0, limit=101, offset=-1 and non-integers are 422 at the query parameter', async () => {
    const { api } = ctx();
    for (const limit of ['0', '101']) assertIssue(await api('GET', `/v2/deployments?limit=${limit}`), ['query', 'limit']);
    assertIssue(await api('GET', '/v2/deployments?limit=abc'), ['query', 'limit'], 'int_parsing');
    assertIssue(await api('GET', '/v2/deployments?offset=-1'), ['query', 'offset']);
    assert.equal((await api('GET', '/v2/deployments?limit=1')).status, 200);
    assert.equal((await api('GET', '/v2/deployments?limit=100')).status, 200);
  });

  test('list: name_contains is a case-insensitive substring; empty matches all; % and _ are literal; name is exact', async () => {
    const { api } = await freshWorkspace(ctx());
    const web = await createDeployment(api, dockerBody({ name: 'Alpha-Web' }));
    const web2 = await createDeployment(api, dockerBody({ name: 'beta-web' }));
    const worker = await createDeployment(api, dockerBody({ name: 'gamma-worker' }));
    const ids = async (query: string) => {
      const res = await api('GET', `/v2/deployments?${query}`);
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      return res.body.resources.map((d: Body) => d.id).sort();
    };
    assert.deepEqual(await ids('name_contains=WEB'), [web.id, web2.id].sort());
    assert.deepEqual(await ids('name_contains=alpha'), [web.id]);
    assert.deepEqual(await ids('name_contains=A-W'), [web.id, web2.id, worker.id].sort());
    assert.deepEqual(await ids('name_contains=ha-w'), [web.id]);
    assert.deepEqual(await ids('name_contains='), [web.id, web2.id, worker.id].sort());
    assert.deepEqual(await ids('name_contains=nothing'), []);
    assert.deepEqual(await ids('name_contains=%25'), [], '% is not a wildcard');
    assert.deepEqual(await ids('name_contains=_'), [], '_ is not a wildcard');
    assert.deepEqual(await ids('name_contains=a%25w'), []);
    assert.deepEqual(await ids('name_contains=beta_web'), []);
    assert.deepEqual(await ids('name=beta-web'), [web2.id]);
    assert.deepEqual(await ids('name=beta'), []);
    assert.deepEqual(await ids('name=BETA-WEB'), [], 'name is exact');
    assert.deepEqual(await ids('name=beta-web&name_contains=beta'), [web2.id]);
  });

  test('list: status, deployment_ids, deployment_type, image_version and tag_value_ids filters', async () => {
    const { server } = ctx();
    const { api } = await freshWorkspace(ctx());
    const dev = await createDeployment(api, dockerBody({ source_config: { deployment_type: 'dev' } }));
    const versioned = await createDeployment(api, dockerBody({ image_version: '0.4.2' }));
    const plain = await createDeployment(api);
    const ids = async (query: string) => {
      const res = await api('GET', `/v2/deployments?${query}`);
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      return res.body.resources.map((d: Body) => d.id).sort();
    };
    const all = [dev.id, versioned.id, plain.id].sort();

    assert.deepEqual(await ids('status=AWAITING_DATABASE'), all);
    assert.deepEqual(await ids('status=READY'), []);
    await server.berth.db.updateTable('deployments').set({ status: 'READY' }).where('id', '=', plain.id).execute();
    assert.deepEqual(await ids('status=READY'), [plain.id]);
    assert.deepEqual(await ids('status=READY,AWAITING_DATABASE'), all);
    assert.deepEqual(await ids('status=READY%2CAWAITING_DATABASE'), all);
    assertIssue(await api('GET', '/v2/deployments?status=SLEEPING'), ['query', 'status', 0], 'enum');

    assert.deepEqual(await ids(`deployment_ids=${dev.id},${plain.id}`), [dev.id, plain.id].sort());
    assert.deepEqual(await ids(`deployment_ids=${dev.id}%2C${plain.id}`), [dev.id, plain.id].sort());
    assert.deepEqual(await ids(`deployment_ids=${versioned.id}`), [versioned.id]);
    assert.deepEqual(await ids(`deployment_ids=${UNKNOWN_ID}`), []);
    const many = [...Array.from({ length: 250 }, () => randomUUID()), dev.id, plain.id];
    assert.deepEqual(await ids(`deployment_ids=${many.join(',')}`), [dev.id, plain.id].sort(), '252 ids, two of them known');
    assert.deepEqual(await ids(`deployment_ids=${many.join(',')}&status=READY`), [plain.id], 'ids and a status');
    const badId = await api('GET', `/v2/deployments?deployment_ids=${dev.id},not-a-uuid`);
    assert.equal(badId.status, 422, badId.text);
    assert.deepEqual(badId.body.detail[0].loc.slice(0, 2), ['query', 'deployment_ids']);
    assert.equal(badId.body.detail[0].type, 'uuid_parsing');

    assert.deepEqual(await ids('deployment_type=dev'), [dev.id]);
    assert.deepEqual(await ids('deployment_type=prod'), [versioned.id, plain.id].sort());
    assert.deepEqual(await ids('deployment_type=dev_free'), []);
    assertIssue(await api('GET', '/v2/deployments?deployment_type=huge'), ['query', 'deployment_type'], 'enum');

    assert.deepEqual(await ids('image_version=0.4.2'), [versioned.id]);
    assert.deepEqual(await ids('image_version=9.9.9'), []);

    assert.deepEqual(await ids(`tag_value_ids=${randomUUID()}`), []);
    assert.deepEqual(await ids(`tag_value_ids=${randomUUID()},${randomUUID()}`), []);

    // Every filter at once, asked again with other values: a listing is compiled once for
    // each set of filters given, and each answer must still follow its own values.
    const everything = (of: Body, type: string, needle: string) =>
      ids(`status=READY,AWAITING_DATABASE&remote_reconciled=false&deployment_type=${type}&image_version=0.4.2&name=${of.name}&name_contains=${needle}`);
    for (const needle of [versioned.name.slice(0, 2), versioned.name.slice(1, 6)]) {
      assert.deepEqual(await everything(versioned, 'prod', needle), [versioned.id], needle);
      assert.deepEqual(await everything(dev, 'dev', needle), [], `${needle}: dev has no image_version`);
      assert.deepEqual(await everything(plain, 'prod', needle), [], `${needle}: plain has no image_version`);
      assert.deepEqual(await everything(versioned, 'dev', needle), [], `${needle}: versioned is prod`);
      assert.deepEqual(await everything(versioned, 'prod', needle), [versioned.id], `${needle}: again`);
    }
    const pageOf = async (query: string) => (await api('GET', `/v2/deployments?${query}`)).body.resources.map((d: Body) => d.id);
    const newestFirst = await pageOf('status=READY,AWAITING_DATABASE');
    assert.equal(newestFirst.length, 3);
    for (let offset = 0; offset < 3; offset++) {
      assert.deepEqual(await pageOf(`status=READY,AWAITING_DATABASE&limit=1&offset=${offset}`), [newestFirst[offset]], `offset ${offset}`);
    }
    assert.deepEqual(await pageOf('status=READY,AWAITING_DATABASE&limit=2&offset=1'), newestFirst.slice(1));
  });

  // ---------------------------------------------------------------- patch

  test('PATCH image_uri makes a new revision, already named latest and listed first', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const res = await patch(api, created.id, { source_revision_config: { image_uri: 'registry.example.com/agent:v2' } });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, created.latest_revision_id);
    assert.match(res.body.latest_revision_id, UUID);
    assert.equal(res.body.source_revision_config.image_uri, 'registry.example.com/agent:v2');
    assert.deepEqual(res.body.secrets, created.secrets, 'secrets carry over');
    assert.deepEqual(res.body.source_config.resource_spec, DEFAULT_RESOURCE_SPEC, 'resources carry over');

    const newest = await api('GET', `/v2/deployments/${created.id}/revisions?limit=1`);
    assert.equal(newest.status, 200);
    assert.equal(newest.body.resources.length, 1);
    assert.equal(newest.body.resources[0].id, res.body.latest_revision_id);
    assert.equal(newest.body.resources[0].source_revision_config.image_uri, 'registry.example.com/agent:v2');
    assert.deepEqual((await api('GET', `/v2/deployments/${created.id}`)).body, res.body);
  });

  test('PATCH of a code-host deployment (docs flow): repo_ref makes a revision, build_on_push changes in place', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const gh = await createDeployment(api, githubBody());
    const res = await patch(api, gh.id, {
      source_config: { build_on_push: true },
      source_revision_config: { repo_ref: 'release-2', langgraph_config_path: 'langgraph.json', image_uri: null },
    });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, gh.latest_revision_id);
    assert.equal(res.body.source_config.build_on_push, true);
    assert.equal(res.body.source_revision_config.repo_ref, 'release-2');
    assert.equal(res.body.source_revision_config.langgraph_config_path, 'langgraph.json');
    assert.equal((await revisionsOf(api, gh.id)).length, 2);
    // The other deployment is untouched.
    assert.deepEqual((await api('GET', `/v2/deployments/${created.id}`)).body.latest_revision_id, created.latest_revision_id);
  });

  test('PATCH build_on_push / custom_url changes in place without a revision', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const res = await patch(api, created.id, { source_config: { build_on_push: true, custom_url: 'https://x' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.latest_revision_id, created.latest_revision_id);
    assert.equal(res.body.source_config.build_on_push, true);
    assert.equal(res.body.source_config.custom_url, 'https://x');
    const got = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(got.body.source_config.build_on_push, true);
    assert.equal(got.body.source_config.custom_url, 'https://x');
    assert.equal((await revisionsOf(api, created.id)).length, 1);
  });

  test('PATCH display_name changes in place; an empty display_name is 422', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    assert.equal(created.display_name, null);
    const res = await patch(api, created.id, { display_name: 'x' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.display_name, 'x');
    assert.equal(res.body.latest_revision_id, created.latest_revision_id);
    assert.equal((await api('GET', `/v2/deployments/${created.id}`)).body.display_name, 'x');
    assertIssue(await patch(api, created.id, { display_name: '' }), ['body', 'display_name'], 'string_too_short');
    assert.equal((await revisionsOf(api, created.id)).length, 1);
  });

  test('PATCH secrets: [] and the same secrets make no revision; changed secrets do and replace them', async () => {
    const { api } = ctx();
    const secrets = [
      { name: 'A', value: secretValue() },
      { name: 'B', value: secretValue() },
    ];
    const created = await createDeployment(api, dockerBody({ secrets }));

    const empty = await patch(api, created.id, { secrets: [] });
    assert.equal(empty.status, 200, empty.text);
    assert.equal(empty.body.latest_revision_id, created.latest_revision_id);
    assert.deepEqual(empty.body.secrets, secrets, 'secrets: [] counts as omitted');

    const same = await patch(api, created.id, { secrets: [...secrets] });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.latest_revision_id, created.latest_revision_id);
    const reordered = await patch(api, created.id, { secrets: [secrets[1], secrets[0]] });
    assert.equal(reordered.body.latest_revision_id, created.latest_revision_id, 'order does not matter');

    const changed = [{ name: 'A', value: secretValue() }];
    const res = await patch(api, created.id, { secrets: changed });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, created.latest_revision_id);
    assert.deepEqual(res.body.secrets, changed);
    assert.deepEqual((await api('GET', `/v2/deployments/${created.id}`)).body.secrets, changed);
    assert.equal(res.body.source_revision_config.image_uri, created.source_revision_config.image_uri);
    assert.equal((await revisionsOf(api, created.id)).length, 2);

    const duplicate = await patch(api, created.id, {
      secrets: [
        { name: 'A', value: 'x' },
        { name: 'A', value: 'y' },
      ],
    });
    assert.equal(duplicate.status, 400, duplicate.text);
    const reserved = await patch(api, created.id, { secrets: [{ name: 'LANGCHAIN_API_KEY', value: 'x' }] });
    assert.equal(reserved.status, 400, reserved.text);
    assert.equal((await revisionsOf(api, created.id)).length, 2);
  });

  test('PATCH resource_spec equal to the current one (after defaults) makes no revision; a different one does', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    for (const resource_spec of [{}, { min_scale: 1 }, { ...DEFAULT_RESOURCE_SPEC }, { cpu: 1, memory_mb: 2048, labels: null }]) {
      const res = await patch(api, created.id, { source_config: { resource_spec } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.latest_revision_id, created.latest_revision_id, JSON.stringify(resource_spec));
    }
    const res = await patch(api, created.id, { source_config: { resource_spec: { max_scale: 4, cpu: 2 } } });
    assert.equal(res.status, 200, res.text);
    assert.notEqual(res.body.latest_revision_id, created.latest_revision_id);
    assert.deepEqual(res.body.source_config.resource_spec, { min_scale: 1, max_scale: 4, cpu: 2, memory_mb: 2048 });
    const [newest] = await revisionsOf(api, created.id);
    assert.deepEqual(newest!.resource_spec, { min_scale: 1, max_scale: 4, cpu: 2, memory_mb: 2048 });
    assert.equal(newest!.source_revision_config.image_uri, created.source_revision_config.image_uri);

    const inverted = await patch(api, created.id, { source_config: { resource_spec: { min_scale: 3, max_scale: 2 } } });
    assert.equal(inverted.status, 400, inverted.text);
  });

  test('PATCH cannot change name, source, integration_id, repo_url or deployment_type (400); resending them is fine', async () => {
    const { api } = ctx();
    const gh = await createDeployment(api, githubBody());
    const changes: Body[] = [
      { name: 'renamed' },
      { source: 'external_docker' },
      { revision_source: 'internal_docker' },
      { source_config: { integration_id: randomUUID() } },
      { source_config: { repo_url: 'https://github.com/acme/other' } },
      { source_config: { deployment_type: 'prod' } },
    ];
    for (const body of changes) {
      const res = await patch(api, gh.id, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(typeof res.body.detail, 'string');
    }
    const unchanged = await api('GET', `/v2/deployments/${gh.id}`);
    assert.deepEqual(unchanged.body.source_config, gh.source_config);
    assert.equal(unchanged.body.name, gh.name);

    const resend = await patch(api, gh.id, {
      name: gh.name,
      source: 'github',
      source_config: {
        integration_id: gh.source_config.integration_id,
        repo_url: gh.source_config.repo_url,
        deployment_type: 'dev',
        listener_id: null,
        listener_config: null,
      },
    });
    assert.equal(resend.status, 200, resend.text);
    assert.equal(resend.body.latest_revision_id, gh.latest_revision_id);
    assert.equal((await patch(api, gh.id, { source: 'codehost' })).status, 200, 'codehost is the same source as github');

    const docker = await createDeployment(api);
    assert.equal((await patch(api, docker.id, { source: 'github' })).status, 400);
    assert.equal((await patch(api, docker.id, { source: 'external_docker', name: docker.name })).status, 200);
    assert.equal((await patch(api, docker.id, { source_config: { deployment_type: 'dev' } })).status, 400);
  });

  test('PATCH with nulls everywhere leaves every value as it is', async () => {
    const { api } = ctx();
    const created = await createDeployment(api, dockerBody({ source_config: { build_on_push: true, custom_url: 'https://keep' } }));
    const res = await patch(api, created.id, {
      name: null,
      source: null,
      display_name: null,
      image_version: null,
      source_config: {
        integration_id: null,
        repo_url: null,
        deployment_type: null,
        build_on_push: null,
        custom_url: null,
        resource_spec: null,
        listener_id: null,
        listener_config: null,
        install_command: null,
        build_command: null,
      },
      source_revision_config: { repo_ref: null, graph_config_path: null, langgraph_config_path: null, image_uri: null },
      secrets: null,
      tracked_packages: null,
      revision_source: null,
    });
    assert.equal(res.status, 200, res.text);
    const { updated_at: _a, ...before } = created;
    const { updated_at: _b, ...after } = res.body;
    assert.deepEqual(after, before);
    const bare = await patch(api, created.id, { source_config: null, source_revision_config: null });
    assert.equal(bare.status, 200, bare.text);
    assert.equal(bare.body.latest_revision_id, created.latest_revision_id);
    const empty = await patch(api, created.id, {});
    assert.equal(empty.status, 200, empty.text);
    assert.equal((await revisionsOf(api, created.id)).length, 1);
  });

  test('PATCH tolerates unknown fields; wrong types are 422; unknown deployment is 404', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const extras = await patch(api, created.id, { env_vars: [], route_through_gateway: false, secret_references: [] });
    assert.equal(extras.status, 200, extras.text);
    assertIssue(await patch(api, created.id, { source_config: { build_on_push: 'yes' } }), ['body', 'source_config', 'build_on_push']);
    assertIssue(await patch(api, created.id, { secrets: 'x' }), ['body', 'secrets']);

    const unknown = await patch(api, UNKNOWN_ID, { display_name: 'x' });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Deployment ID ${UNKNOWN_ID} not found.`, code: 'deployment_not_found' });
    assertIssue(await patch(api, 'not-a-uuid', { display_name: 'x' }), ['path', 'deployment_id'], 'uuid_parsing');
  });

  test('PATCH with top-level tracked_packages and an image_uri shows them in the new revision', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const image = 'registry.example.com/agent@sha256:' + 'a'.repeat(64);
    const res = await patch(api, created.id, {
      revision_source: 'external_docker',
      source_revision_config: { image_uri: image },
      secrets: created.secrets,
      tracked_packages: ['langgraph:1.0.0', 'google-adk:>=0.5'],
    });
    assert.equal(res.status, 200, res.text);
    const revision = await api('GET', `/v2/deployments/${created.id}/revisions/${res.body.latest_revision_id}`);
    assert.equal(revision.status, 200, revision.text);
    assert.equal(revision.body.source_revision_config.image_uri, image);
    assert.deepEqual(revision.body.source_revision_config.tracked_packages, ['langgraph:1.0.0', 'google-adk:>=0.5']);
  });

  test('20 concurrent PATCHes: all 200, 21 revisions numbered 1..21, latest is number 21', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => patch(api, created.id, { source_revision_config: { image_uri: `registry.example.com/agent:c${i}` } })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array.from({ length: 20 }, () => 200),
      results.map((r) => r.text).join('\n'),
    );
    const revisions = await revisionsOf(api, created.id);
    assert.equal(revisions.length, 21);
    assert.deepEqual(
      revisions.map((r) => r.revision_number),
      Array.from({ length: 21 }, (_, i) => 21 - i),
    );
    assert.equal(new Set(revisions.map((r) => r.id)).size, 21);
    assert.equal(new Set(revisions.map((r) => r.source_revision_config.image_uri)).size, 21);
    const latest = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(latest.body.latest_revision_id, revisions[0]!.id);
    assert.equal(revisions[0]!.revision_number, 21);
    assert.equal(latest.body.source_revision_config.image_uri, revisions[0]!.source_revision_config.image_uri);
    // Each PATCH answered the revision it made.
    assert.equal(new Set(results.map((r) => r.body.latest_revision_id)).size, 20);
  });

  // ---------------------------------------------------------------- listeners

  test('listener placement of external_docker deployments', async () => {
    const { api } = await freshWorkspace(ctx());
    const listenerRes = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'c1', compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(listenerRes.status, 201, listenerRes.text);
    const listener = listenerRes.body;

    const missing = await api('POST', '/v2/deployments', { body: dockerBody() });
    assertSourceConfigError(missing);
    assert.ok(missing.body.detail.includes("'source_config.listener_id' is required"), missing.text);
    assert.ok(missing.body.detail.includes(listener.id), missing.text);

    const placed = await createDeployment(
      api,
      dockerBody({ source_config: { listener_id: listener.id, listener_config: { k8s_namespace: 'agents' }, resource_spec: {} } }),
    );
    assert.equal(placed.source_config.listener_id, listener.id);
    assert.deepEqual(placed.source_config.listener_config, { k8s_namespace: 'agents' });

    const wrongNamespace = await api('POST', '/v2/deployments', {
      body: dockerBody({ source_config: { listener_id: listener.id, listener_config: { k8s_namespace: 'elsewhere' } } }),
    });
    assertSourceConfigError(wrongNamespace, /elsewhere/);

    const unknownListener = await api('POST', '/v2/deployments', {
      body: dockerBody({ source_config: { listener_id: UNKNOWN_ID, listener_config: { k8s_namespace: 'agents' } } }),
    });
    assertSourceConfigError(unknownListener, new RegExp(UNKNOWN_ID));

    const implied = await createDeployment(api, dockerBody({ source_config: { listener_id: listener.id } }));
    assert.equal(implied.source_config.listener_id, listener.id);
    assert.deepEqual(implied.source_config.listener_config, { k8s_namespace: 'agents' }, 'the only namespace is filled in');

    // The GHA self-hosted body, explicit nulls included.
    const gha = await createDeployment(api, {
      name: uniqueName('gha'),
      source: 'external_docker',
      source_config: {
        integration_id: null,
        repo_url: null,
        deployment_type: 'dev_free',
        build_on_push: null,
        custom_url: null,
        listener_id: listener.id,
        listener_config: { k8s_namespace: 'agents' },
        resource_spec: { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 1024 },
      },
      source_revision_config: { repo_ref: null, langgraph_config_path: null, image_uri: 'docker.io/acme/agent:1' },
      secrets: [{ name: 'OPENAI_API_KEY', value: secretValue() }],
      env_vars: [],
    });
    assert.equal(gha.source_config.listener_id, listener.id);
    assert.deepEqual(gha.source_config.resource_spec, { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 1024 });

    // A listener of another workspace is unknown here.
    const elsewhere = await freshWorkspace(ctx());
    const foreign = await elsewhere.api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: `foreign-${randomUUID().slice(0, 8)}`, compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(foreign.status, 201, foreign.text);
    const foreignPlacement = await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { listener_id: foreign.body.id } }) });
    assertSourceConfigError(foreignPlacement);

    // A listener with several namespaces needs one named.
    const multi = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'c2', compute_config: { k8s_namespaces: ['a', 'b'] } },
    });
    assert.equal(multi.status, 201, multi.text);
    assertSourceConfigError(await api('POST', '/v2/deployments', { body: dockerBody({ source_config: { listener_id: multi.body.id } }) }));
    const onB = await createDeployment(api, dockerBody({ source_config: { listener_id: multi.body.id, listener_config: { k8s_namespace: 'b' } } }));
    assert.deepEqual(onB.source_config.listener_config, { k8s_namespace: 'b' });
  });

  test('PATCH cannot move a deployment to another listener or namespace (400); resending the placement is fine', async () => {
    const { api } = await freshWorkspace(ctx());
    const l1 = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'one', compute_config: { k8s_namespaces: ['agents', 'other'] } },
    });
    const l2 = await api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: 'two', compute_config: { k8s_namespaces: ['agents'] } } });
    assert.equal(l1.status, 201, l1.text);
    assert.equal(l2.status, 201, l2.text);
    const placed = await createDeployment(api, dockerBody({ source_config: { listener_id: l1.body.id, listener_config: { k8s_namespace: 'agents' } } }));
    const move = await patch(api, placed.id, { source_config: { listener_id: l2.body.id } });
    assert.equal(move.status, 400, move.text);
    const ns = await patch(api, placed.id, { source_config: { listener_config: { k8s_namespace: 'other' } } });
    assert.equal(ns.status, 400, ns.text);

    // SH-K8S resends the create body; only real changes count.
    const resend = await patch(api, placed.id, {
      source_config: { listener_id: l1.body.id, listener_config: { k8s_namespace: 'agents' }, resource_spec: {} },
      source_revision_config: { repo_ref: null, langgraph_config_path: null, image_uri: 'registry.example.com/agent:v9' },
      secrets: placed.secrets,
    });
    assert.equal(resend.status, 200, resend.text);
    assert.equal(resend.body.source_config.listener_id, l1.body.id);
    assert.deepEqual(resend.body.source_config.listener_config, { k8s_namespace: 'agents' });
    assert.equal(resend.body.source_revision_config.image_uri, 'registry.example.com/agent:v9');
  });

  test('a listener id given in upper case places the deployment on that listener (stored in canonical form)', async () => {
    const { api } = await freshWorkspace(ctx());
    const listener = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'upper', compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(listener.status, 201, listener.text);
    const placed = await createDeployment(api, dockerBody({ source_config: { listener_id: listener.body.id.toUpperCase() } }));
    assert.equal(placed.source_config.listener_id, listener.body.id);
    // The listener now has a deployment on it, so it cannot be deleted.
    const del = await api('DELETE', `/v2/listeners/${listener.body.id}`);
    assert.equal(del.status, 409, del.text);
  });

  // ---------------------------------------------------------------- security

  test('security: no key and wrong key are 401; other workspaces and organizations see 404 and nothing listed', async () => {
    const { api, anonymous, server } = ctx();
    const created = await createDeployment(api);
    const other = await otherTenants(ctx());
    const otherWorkspace = client(server.url, { key: other.otherWorkspaceKey });
    const otherOrganization = client(server.url, { key: other.otherOrganizationKey });
    const path = `/v2/deployments/${created.id}`;
    const calls: [string, string, Body | undefined][] = [
      ['GET', path, undefined],
      ['PATCH', path, { display_name: 'hijacked', source_revision_config: { image_uri: 'evil:1' } }],
      ['DELETE', path, undefined],
      ['GET', '/v2/deployments', undefined],
    ];
    for (const [method, url, body] of calls) {
      const none = await anonymous(method, url, { body });
      assert.equal(none.status, 401, `${method} ${url} without key`);
      assert.equal(typeof none.body.detail, 'string');
      const wrong = await anonymous(method, url, { body, key: 'berth_nope' });
      assert.equal(wrong.status, 401, `${method} ${url} with a wrong key`);
      assert.equal(typeof wrong.body.detail, 'string');
    }
    for (const [name, caller] of [
      ['other workspace', otherWorkspace],
      ['other organization', otherOrganization],
    ] as const) {
      for (const [method, url, body] of calls.slice(0, 3)) {
        const res = await caller(method, url, { body });
        assert.equal(res.status, 404, `${name}: ${method} ${url}: ${res.text}`);
        assert.deepEqual(res.body, { detail: `Deployment ID ${created.id} not found.`, code: 'deployment_not_found' });
      }
      const list = await caller('GET', '/v2/deployments?limit=100');
      assert.equal(list.status, 200);
      assert.ok(
        list.body.resources.every((d: Body) => d.id !== created.id),
        name,
      );
      const byId = await caller('GET', `/v2/deployments?deployment_ids=${created.id}`);
      assert.deepEqual(byId.body.resources, [], name);
      const byName = await caller('GET', `/v2/deployments?name=${created.name}`);
      assert.deepEqual(byName.body.resources, [], name);
    }
    // A bound key may not switch to another workspace with the tenant header.
    const switched = await otherWorkspace('GET', path, { tenant: server.workspaceId });
    assert.equal(switched.status, 403, switched.text);

    // Nothing was changed or deleted by the attempts.
    const after = await api('GET', path);
    assert.equal(after.status, 200);
    assert.deepEqual(after.body, created);
  });

  test('security: an organization key needs a workspace (403 "requires workspace specification"); X-Tenant-ID in any case works', async () => {
    const { api, server } = ctx();
    const created = await createDeployment(api);
    const other = await otherTenants(ctx());
    const keyRes = await api('POST', '/v1/api-keys', { body: { name: 'org-wide', workspace_id: null } });
    assert.equal(keyRes.status, 201, keyRes.text);
    const orgKey = client(server.url, { key: keyRes.body.key });
    const path = `/v2/deployments/${created.id}`;

    for (const [method, url, body] of [
      ['GET', path, undefined],
      ['PATCH', path, { display_name: 'x' }],
      ['DELETE', path, undefined],
      ['GET', '/v2/deployments', undefined],
      ['POST', '/v2/deployments', dockerBody()],
    ] as [string, string, Body | undefined][]) {
      const res = await orgKey(method, url, { body });
      assert.equal(res.status, 403, `${method} ${url}: ${res.text}`);
      assert.equal(typeof res.body.detail, 'string');
      assert.match(res.body.detail, /requires workspace specification/);
    }

    for (const header of ['X-Tenant-ID', 'X-Tenant-Id', 'x-tenant-id']) {
      const got = await orgKey('GET', path, { headers: { [header]: server.workspaceId } });
      assert.equal(got.status, 200, `${header}: ${got.text}`);
      assert.equal(got.body.id, created.id);
    }
    const listed = await orgKey('GET', `/v2/deployments?deployment_ids=${created.id}`, { headers: { 'X-Tenant-ID': server.workspaceId } });
    assert.deepEqual(
      listed.body.resources.map((d: Body) => d.id),
      [created.id],
    );
    const patched = await orgKey('PATCH', path, { body: { display_name: 'via org key' }, headers: { 'X-Tenant-ID': server.workspaceId } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.display_name, 'via org key');

    // Another workspace of the same organization is reachable and holds nothing of this one.
    const otherWs = await orgKey('GET', path, { tenant: other.otherWorkspaceId });
    assert.equal(otherWs.status, 404, otherWs.text);

    // Another organization's workspace is forbidden.
    for (const [method, url] of [
      ['GET', path],
      ['DELETE', path],
      ['GET', '/v2/deployments'],
    ]) {
      const res = await orgKey(method!, url!, { tenant: other.otherOrganizationWorkspaceId });
      assert.equal(res.status, 403, `${method} ${url}: ${res.text}`);
      assert.doesNotMatch(res.body.detail, /requires workspace specification|not enabled/i);
    }
    const bad = await orgKey('GET', path, { tenant: 'not-a-uuid' });
    assert.equal(bad.status, 422, bad.text);

    const deleted = await orgKey('DELETE', path, { headers: { 'x-tenant-id': server.workspaceId } });
    assert.equal(deleted.status, 204, deleted.text);
  });

  test('every deployment route is also served under /api-host', async () => {
    const { api } = ctx();
    const created = await api('POST', '/api-host/v2/deployments', { body: dockerBody() });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id;
    assert.equal((await api('GET', `/api-host/v2/deployments/${id}`)).status, 200);
    const listed = await api('GET', `/api-host/v2/deployments?deployment_ids=${id}`);
    assert.deepEqual(
      listed.body.resources.map((d: Body) => d.id),
      [id],
    );
    const patched = await api('PATCH', `/api-host/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: 'r/x:2' } } });
    assert.equal(patched.status, 200, patched.text);
    const revisions = await api('GET', `/api-host/v2/deployments/${id}/revisions?limit=1`);
    assert.equal(revisions.body.resources[0].id, patched.body.latest_revision_id);
    assert.equal((await api('GET', `/api-host/v2/deployments/${UNKNOWN_ID}`)).status, 404);
    assert.equal((await ctx().anonymous('GET', `/api-host/v2/deployments/${id}`)).status, 401);
    const del = await api('DELETE', `/api-host/v2/deployments/${id}`);
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');
  });

  // ---------------------------------------------------------------- secrets at rest and in logs (keep last)

  test('secrets are encrypted at rest: no table holds a plain value', async () => {
    const { api, server } = ctx();
    const value = secretValue();
    const created = await createDeployment(api, dockerBody({ secrets: [{ name: 'AT_REST', value }] }));
    await patch(api, created.id, { secrets: [{ name: 'AT_REST', value: `${value}-v2` }] });
    const db = server.berth.db;
    const secretRows = await db.selectFrom('secret_set_entries').selectAll().execute();
    const mine = secretRows.filter((r) => r.name === 'AT_REST');
    assert.equal(mine.length, 2);
    for (const row of secretRows) {
      assert.ok(!row.value_encrypted.includes(MARK), 'a secret value is stored in clear');
      assert.notEqual(row.value_encrypted, value);
    }
    const everything = JSON.stringify([
      await db.selectFrom('deployments').selectAll().execute(),
      await db.selectFrom('revisions').selectAll().execute(),
      secretRows,
    ]);
    assert.ok(!everything.includes(MARK), 'a secret value is stored in clear');
    // And still reads back decrypted.
    const got = await api('GET', `/v2/deployments/${created.id}`);
    assert.deepEqual(got.body.secrets, [{ name: 'AT_REST', value: `${value}-v2` }]);
  });

  test('no secret value used in this file ever reached the server logs', async () => {
    const { server } = ctx();
    assert.ok(server.logs.length > 0, 'the server logged something');
    const leaked = server.logs.filter((line) => line.includes(MARK));
    assert.deepEqual(leaked, []);
  });
});

/**
 * Deletion, with whatever the harness runs behind the API (an engine may tear the
 * deployment down asynchronously, so GET is polled until 404).
 */
describeOnEachDatabase('deployment deletion', (ctx) => {
  test('DELETE answers 204 with an empty body; then GET, DELETE, PATCH and every revision route are 404', async () => {
    const { api } = ctx();
    const created = await createDeployment(api);
    const del = await api('DELETE', `/v2/deployments/${created.id}`);
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');
    await waitUntilGone(api, created.id);

    const notFound = { detail: `Deployment ID ${created.id} not found.`, code: 'deployment_not_found' };
    const again = await api('DELETE', `/v2/deployments/${created.id}`);
    assert.equal(again.status, 404);
    assert.deepEqual(again.body, notFound);
    const patched = await patch(api, created.id, { display_name: 'x' });
    assert.equal(patched.status, 404);
    assert.deepEqual(patched.body, notFound);
    for (const [method, path, body] of [
      ['GET', `/v2/deployments/${created.id}/revisions`, undefined],
      ['GET', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}`, undefined],
      ['POST', `/v2/deployments/${created.id}/revisions`, {}],
      ['POST', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/redeploy`, undefined],
      ['POST', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/interruption`, undefined],
    ] as [string, string, Body | undefined][]) {
      const res = await api(method, path, { body });
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
      assert.deepEqual(res.body, notFound, `${method} ${path}`);
    }
    assert.deepEqual((await api('GET', `/v2/deployments?deployment_ids=${created.id}`)).body.resources, []);
    const rows = await ctx().server.berth.db.selectFrom('revisions').select('id').where('deployment_id', '=', created.id).execute();
    assert.deepEqual(rows, [], 'the revisions went with the deployment');
    const secrets = await ctx().server.berth.db.selectFrom('secret_sets').select('id').where('deployment_id', '=', created.id).execute();
    assert.deepEqual(secrets, [], 'the secrets went with the deployment');

    // The name is free again.
    await createDeployment(api, dockerBody({ name: created.name }));
    assert.equal((await api('DELETE', `/v2/deployments/${UNKNOWN_ID}`)).status, 404);
    assertIssue(await api('DELETE', '/v2/deployments/not-a-uuid'), ['path', 'deployment_id'], 'uuid_parsing');
  });

  test('DELETE with Content-Type: application/json and an empty body, and under /api-host', async () => {
    const { api } = ctx();
    const first = await createDeployment(api);
    const del = await api('DELETE', `/v2/deployments/${first.id}`, { rawBody: '' });
    assert.equal(del.status, 204, del.text);
    await waitUntilGone(api, first.id);
    const second = await createDeployment(api);
    const prefixed = await api('DELETE', `/api-host/v2/deployments/${second.id}`, { headers: { 'Content-Type': 'application/json' } });
    assert.equal(prefixed.status, 204, prefixed.text);
    assert.equal(prefixed.text, '');
    await waitUntilGone(api, second.id);
    assert.equal((await api('GET', `/api-host/v2/deployments/${second.id}`)).status, 404);
  });

  test('another workspace or organization cannot delete a deployment (404) and it stays', async () => {
    const { api, server } = ctx();
    const created = await createDeployment(api);
    const other = await otherTenants(ctx());
    for (const key of [other.otherWorkspaceKey, other.otherOrganizationKey]) {
      const res = await client(server.url, { key })('DELETE', `/v2/deployments/${created.id}`);
      assert.equal(res.status, 404, res.text);
    }
    const got = await api('GET', `/v2/deployments/${created.id}`);
    assert.equal(got.status, 200);
    assert.notEqual(got.body.status, 'AWAITING_DELETE');
  });
});
