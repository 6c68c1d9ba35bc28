import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { disableSubscription, insertDeliveries } from '../../src/store/repositories/webhooks.js';
import { test } from 'node:test';
import { PERMISSIONS, type Permission } from '../../src/domain/permissions.js';
import type { ApiKeyRole } from '../../src/domain/tenancy.js';
import { type Client, client } from '../support/http.js';
import { describeOnEachDatabase, type SuiteContext } from '../support/suite.js';

type Operation = { operationId?: string; security?: unknown[]; parameters?: { name: string; in: string; required?: boolean }[]; requestBody?: unknown };
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** `/v2/x/{id}` as the table spells it: `/v2/x/:id`. */
const tablePath = (openApiPath: string) => openApiPath.replace(/\{(\w+)\}/g, ':$1');

function authenticatedOperations(doc: any): Map<string, Operation> {
  const found = new Map<string, Operation>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation && operation.security?.length !== 0) found.set(`${method.toUpperCase()} ${tablePath(path)}`, operation);
    }
  }
  return found;
}

const deployment = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: {},
  source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
  secrets: [{ name: 'TOKEN', value: 'secret-value' }],
});

async function created(response: Promise<{ status: number; body: any; text: string }>): Promise<any> {
  const res = await response;
  assert.ok(res.status === 200 || res.status === 201, `${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

/** A delivery row of a subscription, which is then disabled: redeliveries are refused (422), never sent. */
async function webhookDeliveryFixture(server: SuiteContext['server'], subscriptionId: string): Promise<string> {
  const id = randomUUID();
  const now = new Date().toISOString();
  await insertDeliveries(server.berth.db, [
    {
      id,
      subscription_id: subscriptionId,
      event_id: randomUUID(),
      event_type: 'listener.offline',
      body: '{}',
      state: 'failed',
      attempts: 0,
      created_at: now,
      next_attempt_at: null,
      leased_until: null,
      last_status_code: null,
      last_error: null,
      redelivery_of: null,
    },
  ]);
  await disableSubscription(server.berth.db, subscriptionId, now, 'roles test fixture');
  return id;
}

/** Keys of every role in the default workspace; the deployer's is for deployment `own` only. */
async function keysOfEveryRole(ctx: SuiteContext, own: string) {
  const { api, server } = ctx;
  const workspace_id = server.workspaceId;
  const make = async (role: string, extra: object = {}) =>
    (await created(api('POST', '/v1/api-keys', { body: { name: role, role, workspace_id, ...extra } }))).key;
  return {
    admin: server.adminKey,
    member: await make('member'),
    read_only: await make('read_only'),
    deployer: await make('deployer', { deployment_ids: [own.toUpperCase()] }),
    // Runner keys serve the organization, not a workspace.
    runner: (await created(api('POST', '/v1/api-keys', { body: { name: 'runner', role: 'runner', labels: ['linux'] } }))).key,
  };
}

/**
 * A call whose answer status is all that matters. Event streams are cut off once their
 * status arrives (they would otherwise last as long as the deployment).
 */
async function statusOf(baseUrl: string, key: string, method: string, path: string, body: unknown): Promise<{ status: number; code?: string; text: string }> {
  const abort = new AbortController();
  const headers: Record<string, string> = { 'X-Api-Key': key };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  try {
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: abort.signal });
    if (res.headers.get('content-type')?.includes('text/event-stream')) return { status: res.status, text: '(event stream)' };
    const text = await res.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { code?: string }).code;
    } catch {
      code = undefined;
    }
    return { status: res.status, code, text };
  } finally {
    abort.abort();
  }
}

/** What the table promises, stated without its code: who may call, and how a refusal reads. */
function expected(permission: Permission, role: ApiKeyRole, ownDeployment: boolean | undefined): { allowed: boolean; code: string } {
  const allowed = permission.roles.includes(role) || (role === 'deployer' && permission.deployer === true && ownDeployment === true);
  const onlyFor = permission.roles.length === 1 ? permission.roles[0] : undefined;
  let code = 'role_forbids';
  if (role === 'listener') code = 'listener_key_forbidden';
  else if (role === 'runner' || onlyFor === 'runner') code = 'role_forbids';
  else if (onlyFor === 'listener') code = 'listener_key_required';
  else if (onlyFor === 'admin') code = 'admin_key_required';
  return { allowed, code };
}

/** The codes a key's role is refused with (expected() names which one a route answers). */
const ROLE_REFUSALS = new Set([
  'role_forbids',
  'listener_key_forbidden',
  'listener_key_required',
  'admin_key_required',
  'workspace_required',
  'workspace_forbidden',
]);

// Deletes last (they take fixtures away), the listener's very last (its key goes with it).
const order = (key: string) => (key === 'DELETE /v2/listeners/:listener_id' ? 2 : key.startsWith('DELETE ') ? 1 : 0);
const ROLES_IN_ORDER: ApiKeyRole[] = ['listener', 'runner', 'read_only', 'deployer', 'member', 'admin'];

describeOnEachDatabase('the permission table', (ctx) => {
  test('names every authenticated route, and every route it names exists', async () => {
    const { anonymous, server } = ctx();
    const documented = authenticatedOperations((await anonymous('GET', '/openapi.json')).body);
    assert.ok(documented.size > 30, `only ${documented.size} operations`);
    for (const key of documented.keys()) assert.ok(PERMISSIONS.has(key), `${key} is missing from the permission table`);
    for (const key of PERMISSIONS.keys()) {
      const [method, url] = key.split(' ') as [string, string];
      assert.ok(server.berth.app.hasRoute({ method: method as 'GET', url }), `${key} is in the table but no such route exists`);
      assert.ok(server.berth.app.hasRoute({ method: method as 'GET', url: `/api-host${url}` }), `/api-host copy of ${key}`);
    }
  });

  /**
   * Generated from the table: every route, called by a key of every role on resources of
   * its workspace; deployment routes also on a deployment the deployer key was not made
   * for. Allowed callers never get 403; refused ones get 403 with the refusal's own code.
   */
  test('every route, for every role: allowed is not 403, refused is 403 with its code', async (t) => {
    const { api, server } = ctx();
    const stamp = `${Date.now()}`;
    const own = await created(api('POST', '/v2/deployments', { body: deployment(`roles-own-${stamp}`) }));
    const other = await created(api('POST', '/v2/deployments', { body: deployment(`roles-other-${stamp}`) }));
    const listener = await created(
      api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: `roles-${stamp}`, compute_config: { k8s_namespaces: ['ns'] } } }),
    );
    // The matrix deletes it last; should it stop early, a listener left in the workspace would
    // make every later create of this suite name one.
    t.after(() => api('DELETE', `/v2/listeners/${listener.id}`));
    const integration = await created(
      api('POST', '/v1/integrations/codehost', { body: { provider: 'git', name: `roles-${stamp}`, git: { repositories: ['/srv/git/agent.git'] } } }),
    );
    const providerId = `roles${stamp}`;
    await created(
      api('POST', '/v2/auth/providers', {
        body: { provider_id: providerId, name: 'p', client_id: 'c', client_secret: 's', auth_url: 'https://example.com/a', token_url: 'https://example.com/t' },
      }),
    );
    const throwaway = await created(api('POST', '/v1/api-keys', { body: { name: 'to-revoke' } }));
    // A public address passes the outbound check without DNS; disabled, so nothing is ever sent to it.
    const subscription = await created(api('POST', '/v1/webhook-subscriptions', { body: { url: 'http://93.184.215.14/roles', events: ['listener.offline'] } }));
    const delivery = await webhookDeliveryFixture(server, subscription.id);
    const keys: Record<ApiKeyRole, string> = { ...(await keysOfEveryRole(ctx(), own.id)), listener: listener.listener_key };
    const fixtures: Record<string, string> = {
      revision_id: own.latest_revision_id,
      listener_id: listener.id,
      integration_id: integration.id,
      provider_id: providerId,
      key_id: throwaway.id,
      subscription_id: subscription.id,
      delivery_id: delivery,
      job_id: '00000000-0000-4000-8000-000000000000',
      workspace_id: server.workspaceId,
    };
    const revisionOf: Record<string, string> = { [own.id]: own.latest_revision_id, [other.id]: other.latest_revision_id };
    const documented = authenticatedOperations((await api('GET', '/openapi.json')).body);

    const entries = [...PERMISSIONS.entries()].sort(([a], [b]) => order(a) - order(b));
    let checked = 0;
    for (const [key, permission] of entries) {
      const [method, path] = key.split(' ') as [string, string];
      const operation = documented.get(key) ?? documented.get(key.replace('/integrations/github', '/integrations/codehost'));
      assert.ok(operation, `${key} has no documented operation`);
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=x`);
      const body = operation.requestBody ? {} : undefined;
      const deployments = path.includes(':deployment_id') ? [own.id as string, other.id as string] : [undefined];
      for (const deploymentId of deployments) {
        const url =
          path.replace(/:(\w+)/g, (_, name: string) => {
            if (name === 'deployment_id') return deploymentId!;
            if (name === 'revision_id') return revisionOf[deploymentId!]!;
            assert.ok(fixtures[name], `no fixture for :${name} in ${key}`);
            return fixtures[name];
          }) + (query.length > 0 ? `?${query.join('&')}` : '');
        for (const role of ROLES_IN_ORDER) {
          // Only the deployer's answer depends on which deployment it is.
          if (deploymentId === other.id && role !== 'deployer') continue;
          const { allowed, code } = expected(permission, role, deploymentId === undefined ? undefined : deploymentId === own.id);
          const res = await statusOf(server.url, keys[role], method, url, body);
          const label = `${role}: ${method} ${url} → ${res.status} ${res.text.slice(0, 200)}`;
          assert.ok(res.status !== 500, label);
          // Allowed: the role passes, so no refusal of a role may come back (a route may still
          // refuse its own input with a 403 of its own, as the runner's archive does a bad token).
          if (allowed) assert.ok(res.status !== 403 || !ROLE_REFUSALS.has(res.code ?? ''), label);
          else assert.deepEqual([res.status, res.code], [403, code], label);
          checked += 1;
        }
      }
    }
    assert.ok(checked > PERMISSIONS.size * ROLES_IN_ORDER.length, `only ${checked} calls`);
  });

  test('a deployer key sends no secrets or configuration, and a read-only key changes nothing', async () => {
    const { api, server } = ctx();
    const own = await created(api('POST', '/v2/deployments', { body: deployment(`roles-body-${Date.now()}`) }));
    const keys = await keysOfEveryRole(ctx(), own.id);
    const deployer = client(server.url, { key: keys.deployer });
    const revisions = `/v2/deployments/${own.id}/revisions`;
    for (const body of [{ secrets: [{ name: 'TOKEN', value: 'other' }] }, { source_config: { build_command: 'make' } }]) {
      const res = await deployer('POST', revisions, { body });
      assert.deepEqual([res.status, res.body.code], [403, 'role_forbids'], res.text);
      assert.ok(!res.text.includes('other'), res.text);
    }
    const shipped = await deployer('POST', revisions, { body: { source_revision_config: { image_uri: 'registry.example.com/agent:v2' }, secrets: null } });
    assert.equal(shipped.status, 201, shipped.text);
    assert.equal(shipped.body.source_revision_config.image_uri, 'registry.example.com/agent:v2');
    const patch = await deployer('PATCH', `/v2/deployments/${own.id}`, { body: { source_revision_config: { image_uri: 'registry.example.com/agent:v3' } } });
    assert.deepEqual([patch.status, patch.body.code], [403, 'role_forbids']);

    const readOnly = client(server.url, { key: keys.read_only });
    assert.equal((await readOnly('GET', `/v2/deployments/${own.id}`)).status, 200);
    const refused = await readOnly('DELETE', `/v2/deployments/${own.id}`);
    assert.deepEqual([refused.status, refused.body.code], [403, 'role_forbids']);
    const listed = (await api('GET', revisions)).body.resources as { id: string }[];
    assert.equal(listed.length, 2, 'only the deployer made a revision');
    assert.notEqual((await api('GET', `/v2/deployments/${own.id}`)).body.status, 'AWAITING_DELETE');
  });

  test('keys are created with their role, listed with it, and refused when their deployments are not of their workspace', async () => {
    const { api, server } = ctx();
    const own = await created(api('POST', '/v2/deployments', { body: deployment(`roles-list-${Date.now()}`) }));
    const keys = await keysOfEveryRole(ctx(), own.id);
    const listed = (await api('GET', '/v1/api-keys')).body as { role: string; deployment_ids: string[] }[];
    assert.ok(listed.some((key) => key.role === 'deployer' && key.deployment_ids.length === 1 && key.deployment_ids[0] === own.id));
    assert.ok(listed.some((key) => key.role === 'read_only' && key.deployment_ids.length === 0));
    assert.ok(keys.deployer.startsWith('berth_'));

    const bad = async (body: object) => api('POST', '/v1/api-keys', { body: { name: 'bad', ...body } });
    assert.equal((await bad({ role: 'deployer', deployment_ids: [own.id] })).status, 422, 'a deployer key needs a workspace');
    assert.equal((await bad({ role: 'deployer', workspace_id: server.workspaceId })).status, 422, 'and deployments');
    assert.equal((await bad({ role: 'member', workspace_id: server.workspaceId, deployment_ids: [own.id] })).status, 422, 'only deployers list deployments');
    assert.equal((await bad({ role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [] })).status, 422);
    const unknown = await bad({ role: 'deployer', workspace_id: server.workspaceId, deployment_ids: ['00000000-0000-4000-8000-000000000000'] });
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'deployment_not_found']);
  });

  test('hostile: a deployer key of deployment X in workspace A reaches neither deployment Y nor anything of workspace B', async () => {
    const { api, server } = ctx();
    const stamp = `${Date.now()}`;
    const x = await created(api('POST', '/v2/deployments', { body: deployment(`roles-x-${stamp}`) }));
    const y = await created(api('POST', '/v2/deployments', { body: deployment(`roles-y-${stamp}`) }));
    const workspaceB = await created(api('POST', '/v1/workspaces', { body: { name: `roles-b-${stamp}` } }));
    const z = await created(api('POST', '/v2/deployments', { body: deployment(`roles-z-${stamp}`), tenant: workspaceB.id }));
    const keys = await keysOfEveryRole(ctx(), x.id);
    const deployer: Client = client(server.url, { key: keys.deployer });

    // Its own deployment: it may ship, follow and read.
    assert.equal((await deployer('GET', `/v2/deployments/${x.id}`)).status, 200);
    assert.equal((await deployer('POST', `/v2/deployments/${x.id}/revisions`, { body: {} })).status, 201);
    assert.notEqual((await deployer('POST', `/v2/deployments/${x.id}/revisions/${x.latest_revision_id}/redeploy`)).status, 403);
    assert.equal((await deployer('POST', `/v2/deployments/${x.id}/unpin`)).status, 200);

    const attempts: [string, string, object?][] = [];
    for (const target of [y, z]) {
      const revision = `/v2/deployments/${target.id}/revisions/${target.latest_revision_id}`;
      attempts.push(
        ['GET', `/v2/deployments/${target.id}`],
        ['PATCH', `/v2/deployments/${target.id}`, {}],
        ['DELETE', `/v2/deployments/${target.id}`],
        ['POST', `/v2/deployments/${target.id}/revisions`, {}],
        ['GET', `/v2/deployments/${target.id}/revisions`],
        ['POST', `${revision}/redeploy`],
        ['POST', `${revision}/interruption`],
        ['POST', `/v2/deployments/${target.id}/unpin`],
        ['GET', `${revision}/logs`],
        ['POST', `/v1/projects/${target.id}/deploy_logs`, {}],
        ['GET', `/v2/deployments/${target.id}/events`],
        ['POST', `/v2/deployments/${target.id}/upload-url`],
      );
    }
    attempts.push(['GET', '/v2/deployments'], ['POST', '/v2/deployments', deployment(`roles-w-${stamp}`)], ['GET', '/v2/listeners'], ['GET', '/v1/api-keys']);
    for (const [method, path, body] of attempts) {
      const res = await statusOf(server.url, keys.deployer, method, path, body);
      assert.equal(res.status, 403, `${method} ${path} → ${res.status} ${res.text.slice(0, 200)}`);
      assert.ok(!res.text.includes('secret-value'));
    }
    // Naming workspace B outright: refused before anything is looked up, even for its own deployment id.
    const viaTenant = await deployer('GET', `/v2/deployments/${x.id}`, { tenant: workspaceB.id });
    assert.deepEqual([viaTenant.status, viaTenant.body.code], [403, 'workspace_forbidden']);
    const zViaTenant = await deployer('POST', `/v2/deployments/${z.id}/revisions`, { tenant: workspaceB.id, body: {} });
    assert.equal(zViaTenant.status, 403);

    // Nothing of Y or Z changed: each still has only its first revision.
    for (const [target, tenant] of [
      [y, undefined],
      [z, workspaceB.id],
    ] as const) {
      const revisions = await api('GET', `/v2/deployments/${target.id}/revisions`, tenant ? { tenant } : {});
      assert.equal(revisions.body.resources.length, 1, `${target.name}: ${revisions.text.slice(0, 200)}`);
    }
    // Nor can an admin of A make a deployer key for B's deployment in A, or another organization's admin one for X.
    const crossWorkspace = await api('POST', '/v1/api-keys', { body: { role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [z.id] } });
    assert.deepEqual([crossWorkspace.status, crossWorkspace.body.code], [404, 'deployment_not_found']);
    const org = await server.berth.services.tenancy.createOrganization(`roles-org-${stamp}`);
    assert.ok(org);
    const foreign = await client(server.url, { key: org.apiKey })('POST', '/v1/api-keys', {
      body: { role: 'deployer', workspace_id: org.workspaceId, deployment_ids: [x.id] },
    });
    assert.deepEqual([foreign.status, foreign.body.code], [404, 'deployment_not_found']);
  });
});
