import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { type GitIntegrationFixture, gitIntegration } from './codehost.js';
import { deadline } from './deadline.js';
import { type Client, client } from './http.js';
import { describeOnEachDatabase, type SuiteContext } from './suite.js';

/*
 * What the deployments API's suites (test/http/deployments-*.test.ts, one file a subject)
 * share: request bodies, assertions and the suite around them.
 */

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
export const DEFAULT_RESOURCE_SPEC = { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 2048 };
/**
 * Every secret value of the deployments suites starts with this marker, so their last
 * tests can check that no value reached the database in clear or the server's logs.
 */
export const MARK = 'S3CR3T-VALUE-';

export const secretValue = () => `${MARK}${randomUUID()}`;
export const uniqueName = (prefix = 'dep') => `${prefix}-${randomUUID().slice(0, 8)}`;

export type Body = Record<string, any>;

/** A self-hosted image deployment as CLI-new sends it (`resource_spec: {}`). */
export function dockerBody(overrides: Body = {}): Body {
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
export function codehostBody(integration: GitIntegrationFixture, overrides: Body = {}): Body {
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

export async function createDeployment(api: Client, body: Body = dockerBody()): Promise<Body> {
  const res = await api('POST', '/v2/deployments', { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

export async function revisionsOf(api: Client, deploymentId: string): Promise<Body[]> {
  const res = await api('GET', `/v2/deployments/${deploymentId}/revisions?limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.resources;
}

export async function patch(api: Client, id: string, body: Body) {
  return api('PATCH', `/v2/deployments/${id}`, { body });
}

/** A client whose key is bound to a brand-new workspace (for tests that count or place). */
export async function freshWorkspace(ctx: SuiteContext): Promise<{ api: Client; workspaceId: string }> {
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
export async function stopEngine(ctx: SuiteContext): Promise<void> {
  await (ctx.server.berth as unknown as { engine?: { stop(): Promise<void> } }).engine?.stop();
}

/**
 * After a DELETE the deployment may pass through AWAITING_DELETE (real-clients.md 3.5);
 * GET must answer 404 within the time limit, and nothing but AWAITING_DELETE before that.
 */
export async function waitUntilGone(api: Client, id: string, baseMs = 20_000): Promise<void> {
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
export function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>, body = '') {
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

export function assertIssue(res: { status: number; body: any; text: string }, loc: (string | number)[], type?: string): void {
  assert.equal(res.status, 422, res.text);
  assert.ok(Array.isArray(res.body.detail), res.text);
  const issue = res.body.detail.find((d: { loc: unknown }) => JSON.stringify(d.loc) === JSON.stringify(loc));
  assert.ok(issue, `expected an issue at ${JSON.stringify(loc)} in ${res.text}`);
  if (type) assert.equal(issue.type, type, res.text);
}

export function assertSourceConfigError(res: { status: number; body: any; text: string }, pattern?: RegExp): void {
  assert.equal(res.status, 400, res.text);
  assert.equal(typeof res.body.detail, 'string');
  assert.match(res.body.detail, /^Source configuration error/);
  if (pattern) assert.match(res.body.detail, pattern);
}

/**
 * One subject of the deployments API, on each database: the engine stopped (see
 * `stopEngine`), a git integration for code-host bodies (`githubBody`, `integration`), and a last test
 * that no secret value of the suite reached the server's logs.
 */
export function describeDeployments(
  name: string,
  body: (ctx: () => SuiteContext, githubBody: (overrides?: Body) => Body, integration: () => GitIntegrationFixture) => void,
): void {
  describeOnEachDatabase(name, (ctx) => {
    // The code-host integration this suite's code-host deployments build from.
    let integration: GitIntegrationFixture;
    before(async () => {
      integration = await gitIntegration(ctx().api);
    });
    after(async () => integration.remove());

    before(() => stopEngine(ctx()));

    body(
      ctx,
      (overrides = {}) => codehostBody(integration, overrides),
      () => integration,
    );

    test('no secret value used in this suite ever reached the server logs', async () => {
      const { server } = ctx();
      assert.ok(server.logs.length > 0, 'the server logged something');
      const leaked = server.logs.filter((line) => line.includes(MARK));
      assert.deepEqual(leaked, []);
    });
  });
}
