import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { findListenerForPlacement, listListenerIds } from '../../src/services/listeners.js';
import { type Client, client } from '../support/http.js';
import { newSourceConfig } from '../../src/domain/deployment-config.js';
import { insertDeployment as insertDeploymentRecord } from '../../src/store/repositories/deployments.js';
import { deploymentRow } from '../support/rows.js';
import { describeOnEachDatabase, otherTenants, type SuiteContext } from '../support/suite.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

function uniqueCluster(prefix = 'cluster'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

async function createListener(api: Client, overrides: Record<string, unknown> = {}) {
  const res = await api('POST', '/v2/listeners', {
    body: { compute_type: 'k8s', compute_id: uniqueCluster(), compute_config: { k8s_namespaces: ['agents'] }, ...overrides },
  });
  assert.equal(res.status, 201, res.text);
  // The listener's key is in the create answer only (docs/listener-protocol.md).
  const { listener_key, ...listener } = res.body;
  assert.match(listener_key, /^berth_/);
  return listener;
}

/** A deployments row placed on the listener, written directly: deployments have their own routes. */
function deploymentOnListener(workspaceId: string, listenerId: string) {
  return deploymentRow(workspaceId, {
    source_config: { ...newSourceConfig('external_docker', {}), listener_id: listenerId, listener_config: { k8s_namespace: 'agents' } },
    listener_id: listenerId,
  });
}

async function insertDeployment(ctx: SuiteContext, listenerId: string): Promise<string> {
  const row = deploymentOnListener(ctx.server.workspaceId, listenerId);
  await insertDeploymentRecord(ctx.server.berth.db, row);
  return row.id;
}

/** A client whose key is bound to a brand-new workspace, for tests that count listeners. */
async function freshWorkspace(ctx: SuiteContext): Promise<{ api: Client; workspaceId: string }> {
  const ws = await ctx.api('POST', '/v1/workspaces', { body: { name: `ws-${randomUUID()}` } });
  const key = await ctx.api('POST', '/v1/api-keys', { body: { name: 'listeners', workspace_id: ws.body.id } });
  return { api: client(ctx.server.url, { key: key.body.key }), workspaceId: ws.body.id };
}

describeOnEachDatabase('listeners', (ctx) => {
  test('create answers 201 with the listener; duplicate namespaces are dropped in order', async () => {
    const { api } = ctx();
    const res = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: 'prod-cluster', compute_config: { k8s_namespaces: ['agents', 'staging', 'agents'] } },
    });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), [
      'compute_config',
      'compute_id',
      'compute_type',
      'created_at',
      'id',
      'last_seen_at',
      'listener_key',
      'status',
      'updated_at',
      'version',
    ]);
    assert.match(res.body.id, /^[0-9a-f-]{36}$/);
    assert.equal(res.body.compute_type, 'k8s');
    assert.equal(res.body.compute_id, 'prod-cluster');
    assert.deepEqual(res.body.compute_config, { k8s_namespaces: ['agents', 'staging'] });
    assert.equal(res.body.version, null);
    assert.match(res.body.created_at, ISO);
    assert.equal(res.body.updated_at, res.body.created_at);

    const withVersion = await createListener(api, { version: '0.11.2', compute_config: { k8s_namespaces: null } });
    assert.equal(withVersion.version, '0.11.2');
    assert.deepEqual(withVersion.compute_config, { k8s_namespaces: [] });
  });

  test('the same compute_id twice in a workspace is 409; another workspace may use it', async () => {
    const { api, server } = ctx();
    const computeId = uniqueCluster('dup');
    await createListener(api, { compute_id: computeId });
    const again = await api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: computeId, compute_config: {} } });
    assert.equal(again.status, 409);
    assert.equal(again.body.detail, `Listener for LangSmith workspace ID '${server.workspaceId}' and compute ID '${computeId}' already exists.`);

    const other = await otherTenants(ctx());
    const otherApi = client(server.url, { key: other.otherWorkspaceKey });
    const elsewhere = await createListener(otherApi, { compute_id: computeId });
    assert.equal(elsewhere.compute_id, computeId);
  });

  test('concurrent creates of one compute_id: exactly one wins, the rest get 409', async () => {
    const { api } = ctx();
    const computeId = uniqueCluster('race');
    const body = { compute_type: 'k8s', compute_id: computeId, compute_config: { k8s_namespaces: ['a'] } };
    const results = await Promise.all(Array.from({ length: 6 }, () => api('POST', '/v2/listeners', { body })));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409]);
  });

  test('list pages oldest first; offset is request offset plus items returned', async () => {
    const { api } = await freshWorkspace(ctx());
    const empty = await api('GET', '/v2/listeners');
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, { resources: [], offset: 0 });

    const created = [];
    for (const name of ['one', 'two', 'three']) created.push(await createListener(api, { compute_id: name }));

    const all = await api('GET', '/v2/listeners?limit=100');
    assert.deepEqual(all.body.resources, created);
    assert.equal(all.body.offset, 3);
    const first = await api('GET', '/v2/listeners?limit=2');
    assert.deepEqual(
      first.body.resources.map((l: { id: string }) => l.id),
      [created[0].id, created[1].id],
    );
    assert.equal(first.body.offset, 2);
    const second = await api('GET', `/v2/listeners?limit=2&offset=${first.body.offset}`);
    assert.deepEqual(
      second.body.resources.map((l: { id: string }) => l.id),
      [created[2].id],
    );
    assert.equal(second.body.offset, 3);
    const past = await api('GET', '/v2/listeners?offset=10');
    assert.deepEqual(past.body, { resources: [], offset: 10 });
  });

  test('out-of-range and malformed pagination is 422 at the query parameter', async () => {
    const { api } = ctx();
    for (const limit of ['0', '101']) {
      const res = await api('GET', `/v2/listeners?limit=${limit}`);
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.detail[0].loc, ['query', 'limit']);
    }
    const text = await api('GET', '/v2/listeners?limit=abc');
    assert.equal(text.status, 422);
    assert.equal(text.body.detail[0].type, 'int_parsing');
    const negative = await api('GET', '/v2/listeners?offset=-1');
    assert.equal(negative.status, 422);
    assert.deepEqual(negative.body.detail[0].loc, ['query', 'offset']);
  });

  test('get by id; unknown id is 404; a non-UUID id is 422 uuid_parsing', async () => {
    const { api } = ctx();
    const listener = await createListener(api);
    const got = await api('GET', `/v2/listeners/${listener.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, listener);
    assert.equal((await api('GET', `/v2/listeners/${listener.id.toUpperCase()}`)).body.id, listener.id);

    const unknown = await api('GET', `/v2/listeners/${UNKNOWN_ID}`);
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { detail: `Listener ID ${UNKNOWN_ID} not found.`, code: 'listener_not_found' });

    const malformed = await api('GET', '/v2/listeners/not-a-uuid');
    assert.equal(malformed.status, 422);
    assert.deepEqual(malformed.body.detail[0].loc, ['path', 'listener_id']);
    assert.equal(malformed.body.detail[0].type, 'uuid_parsing');
  });

  test('PATCH changes version and namespaces and moves updated_at', async () => {
    const { api } = ctx();
    const listener = await createListener(api);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await api('PATCH', `/v2/listeners/${listener.id}`, {
      body: { version: '1.2.3', compute_config: { k8s_namespaces: ['agents', 'agents-staging', 'agents'] } },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.version, '1.2.3');
    assert.deepEqual(res.body.compute_config.k8s_namespaces, ['agents', 'agents-staging']);
    assert.equal(res.body.compute_id, listener.compute_id);
    assert.equal(res.body.created_at, listener.created_at);
    assert.ok(res.body.updated_at > listener.updated_at);
    assert.deepEqual((await api('GET', `/v2/listeners/${listener.id}`)).body, res.body);

    const emptied = await api('PATCH', `/v2/listeners/${listener.id}`, { body: { compute_config: { k8s_namespaces: [] } } });
    assert.deepEqual(emptied.body.compute_config.k8s_namespaces, []);
    assert.equal(emptied.body.version, '1.2.3');
  });

  test('PATCH: null or absent fields leave values; unknown fields are ignored', async () => {
    const { api } = ctx();
    const listener = await createListener(api, { version: 'v1', compute_config: { k8s_namespaces: ['a', 'b'] } });
    for (const body of [{}, { version: null, compute_config: null }, { compute_config: { k8s_namespaces: null } }, { enabled: false }]) {
      const res = await api('PATCH', `/v2/listeners/${listener.id}`, { body });
      assert.equal(res.status, 200, `${JSON.stringify(body)}: ${res.text}`);
      assert.deepEqual(res.body, listener, 'nothing changed, not even updated_at');
    }
    const versionOnly = await api('PATCH', `/v2/listeners/${listener.id}`, { body: { version: 'v2', enabled: false } });
    assert.equal(versionOnly.body.version, 'v2');
    assert.deepEqual(versionOnly.body.compute_config.k8s_namespaces, ['a', 'b']);
  });

  test('PATCH cannot change compute_type or compute_id (400); equal values are accepted', async () => {
    const { api } = ctx();
    const listener = await createListener(api);
    const changedId = await api('PATCH', `/v2/listeners/${listener.id}`, { body: { compute_id: 'other-cluster' } });
    assert.equal(changedId.status, 400);
    assert.match(changedId.body.detail, /'compute_id' cannot be changed/);
    const changedType = await api('PATCH', `/v2/listeners/${listener.id}`, { body: { compute_type: 'ecs' } });
    assert.equal(changedType.status, 400);
    assert.match(changedType.body.detail, /'compute_type' cannot be changed/);
    assert.equal((await api('GET', `/v2/listeners/${listener.id}`)).body.compute_id, listener.compute_id);

    const same = await api('PATCH', `/v2/listeners/${listener.id}`, {
      body: { compute_type: 'k8s', compute_id: listener.compute_id, version: 'v9' },
    });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.version, 'v9');
    assert.equal((await api('PATCH', `/v2/listeners/${UNKNOWN_ID}`, { body: { version: 'x' } })).status, 404);
  });

  test('create tolerates unknown fields', async () => {
    const { api } = ctx();
    const listener = await createListener(api, { enabled: true, name: 'ignored', compute_config: { k8s_namespaces: ['x'], extra: 1 } });
    assert.equal(listener.name, undefined);
    assert.deepEqual(listener.compute_config, { k8s_namespaces: ['x'] });
  });

  test('wrong types and invalid namespaces are 422 at the field', async () => {
    const { api } = ctx();
    const base = { compute_type: 'k8s', compute_id: uniqueCluster(), compute_config: { k8s_namespaces: ['ok'] } };
    const cases: [Record<string, unknown>, (string | number)[], string][] = [
      [{ compute_config: 'x' }, ['body', 'compute_config'], 'dict_type'],
      [{ compute_config: { k8s_namespaces: 'agents' } }, ['body', 'compute_config', 'k8s_namespaces'], 'list_type'],
      [{ compute_config: { k8s_namespaces: [5] } }, ['body', 'compute_config', 'k8s_namespaces', 0], 'string_type'],
      [{ compute_config: { k8s_namespaces: ['ok', 'Bad_NS'] } }, ['body', 'compute_config', 'k8s_namespaces', 1], 'string_pattern_mismatch'],
      [{ compute_config: { k8s_namespaces: ['-lead'] } }, ['body', 'compute_config', 'k8s_namespaces', 0], 'string_pattern_mismatch'],
      [{ compute_config: { k8s_namespaces: [''] } }, ['body', 'compute_config', 'k8s_namespaces', 0], 'string_too_short'],
      [{ compute_config: { k8s_namespaces: ['a'.repeat(64)] } }, ['body', 'compute_config', 'k8s_namespaces', 0], 'string_too_long'],
      [{ version: 5 }, ['body', 'version'], 'string_type'],
      [{ compute_type: 'ecs' }, ['body', 'compute_type'], 'literal_error'],
      [{ compute_id: 7 }, ['body', 'compute_id'], 'string_type'],
      [{ compute_id: '' }, ['body', 'compute_id'], 'string_too_short'],
      [{ compute_id: undefined }, ['body', 'compute_id'], 'missing'],
      [{ compute_config: undefined }, ['body', 'compute_config'], 'missing'],
    ];
    for (const [override, loc, type] of cases) {
      const res = await api('POST', '/v2/listeners', { body: { ...base, ...override } });
      assert.equal(res.status, 422, JSON.stringify(override));
      assert.ok(
        res.body.detail.some((d: { loc: unknown; type: string }) => JSON.stringify(d.loc) === JSON.stringify(loc) && d.type === type),
        `${JSON.stringify(override)} → ${res.text}`,
      );
    }
    const listener = await createListener(api);
    const patch = await api('PATCH', `/v2/listeners/${listener.id}`, { body: { version: 5, compute_config: { k8s_namespaces: 'x' } } });
    assert.equal(patch.status, 422);
    assert.deepEqual(
      patch.body.detail.map((d: { loc: unknown }) => d.loc),
      [
        ['body', 'version'],
        ['body', 'compute_config', 'k8s_namespaces'],
      ],
    );
  });

  test('delete answers 204 with an empty body, then the listener is gone', async () => {
    const { api } = ctx();
    const listener = await createListener(api);
    // Some clients send Content-Type: application/json with no body on DELETE.
    const res = await api('DELETE', `/v2/listeners/${listener.id}`, { rawBody: '' });
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assert.equal((await api('GET', `/v2/listeners/${listener.id}`)).status, 404);
    const again = await api('DELETE', `/v2/listeners/${listener.id}`);
    assert.deepEqual([again.status, again.body], [404, { detail: `Listener ID ${listener.id} not found.`, code: 'listener_not_found' }]);
    const compute = await createListener(api, { compute_id: listener.compute_id });
    assert.notEqual(compute.id, listener.id, 'the compute_id is free again');
  });

  test('delete is refused with 409 while a deployment runs on the listener', async () => {
    const { api, server } = ctx();
    const listener = await createListener(api);
    const deploymentId = await insertDeployment(ctx(), listener.id);

    const refused = await api('DELETE', `/v2/listeners/${listener.id}`);
    assert.equal(refused.status, 409);
    assert.match(refused.body.detail, /1 deployment still runs on it/);
    assert.match(refused.body.detail, /Delete those deployments first/);
    assert.equal((await api('GET', `/v2/listeners/${listener.id}`)).status, 200);

    await server.berth.db.deleteFrom('deployments').where('id', '=', deploymentId).execute();
    assert.equal((await api('DELETE', `/v2/listeners/${listener.id}`)).status, 204);
  });

  test('a deployment placed while a delete waits keeps the listener alive (409)', async () => {
    const { api, server } = ctx();
    const listener = await createListener(api);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let placementHoldsListener!: (held: boolean) => void;
    const holding = new Promise<boolean>((resolve) => (placementHoldsListener = resolve));
    const placing = server.berth.db.transaction().execute(async (trx) => {
      const found = await findListenerForPlacement(trx, server.workspaceId, listener.id);
      placementHoldsListener(found !== undefined);
      if (!found) return;
      await gate;
      await insertDeploymentRecord(trx, deploymentOnListener(server.workspaceId, listener.id));
    });
    // The delete goes out only once the placement holds the listener: on a busy machine it
    // could otherwise reach the row first and (rightly) delete it.
    assert.equal(await holding, true, 'the placement found the listener');
    const deleting = api('DELETE', `/v2/listeners/${listener.id}`);
    // Give the delete time to reach the listener row while the placement still holds it.
    await new Promise((resolve) => setTimeout(resolve, 150));
    release();
    await placing;
    const res = await deleting;
    assert.equal(res.status, 409, res.text);
    assert.equal((await api('GET', `/v2/listeners/${listener.id}`)).status, 200);
  });

  test("findListenerForPlacement sees only the workspace's own listeners", async () => {
    const { api, server } = ctx();
    const listener = await createListener(api);
    const other = await otherTenants(ctx());
    const found = await findListenerForPlacement(server.berth.db, server.workspaceId, listener.id.toUpperCase());
    assert.deepEqual(found, listener);
    assert.equal(await findListenerForPlacement(server.berth.db, other.otherWorkspaceId, listener.id), undefined);
    assert.equal(await findListenerForPlacement(server.berth.db, server.workspaceId, UNKNOWN_ID), undefined);
    assert.ok((await listListenerIds(server.berth.db, server.workspaceId)).includes(listener.id));
    assert.deepEqual(await listListenerIds(server.berth.db, other.otherWorkspaceId), []);
  });

  test('every route is served under /api-host', async () => {
    const { api } = ctx();
    const created = await api('POST', '/api-host/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: uniqueCluster(), compute_config: { k8s_namespaces: ['agents'] } },
    });
    assert.equal(created.status, 201);
    const id = created.body.id;
    assert.equal((await api('GET', '/api-host/v2/listeners?limit=100')).status, 200);
    assert.equal((await api('GET', `/api-host/v2/listeners/${id}`)).status, 200);
    assert.equal((await api('PATCH', `/api-host/v2/listeners/${id}`, { body: { version: 'x' } })).status, 200);
    assert.equal((await api('DELETE', `/api-host/v2/listeners/${id}`)).status, 204);
  });

  test("another workspace's or organization's key neither sees nor touches this workspace's listener", async () => {
    const { api, server } = ctx();
    const listener = await createListener(api);
    const other = await otherTenants(ctx());
    for (const key of [other.otherWorkspaceKey, other.otherOrganizationKey]) {
      const stranger = client(server.url, { key });
      const list = await stranger('GET', '/v2/listeners?limit=100');
      assert.equal(list.status, 200);
      assert.ok(list.body.resources.every((l: { id: string }) => l.id !== listener.id));
      // GET, PATCH and DELETE answer as for a listener that does not exist: the generated cases of test/http/openapi.test.ts.
      const get = await stranger('GET', `/v2/listeners/${listener.id}`);
      assert.deepEqual([get.status, get.body], [404, { detail: `Listener ID ${listener.id} not found.`, code: 'listener_not_found' }]);
      // Naming this workspace in the tenant header does not help either.
      assert.equal((await stranger('GET', `/v2/listeners/${listener.id}`, { tenant: server.workspaceId })).status, 403);
    }
    assert.deepEqual((await api('GET', `/v2/listeners/${listener.id}`)).body, listener);
  });

  test('an organization key needs the workspace in X-Tenant-Id', async () => {
    const { api, server } = ctx();
    const listener = await createListener(api);
    const created = await api('POST', '/v1/api-keys', { body: { name: 'org', workspace_id: null } });
    assert.equal(created.status, 201);
    const orgKey = client(server.url, { key: created.body.key });

    const unscoped = await orgKey('GET', '/v2/listeners');
    assert.equal(unscoped.status, 403);
    assert.match(unscoped.body.detail, /requires workspace specification/);
    assert.equal((await orgKey('GET', `/v2/listeners/${listener.id}`)).status, 403);

    const scoped = await orgKey('GET', '/v2/listeners?limit=100', { tenant: server.workspaceId });
    assert.equal(scoped.status, 200);
    assert.ok(scoped.body.resources.some((l: { id: string }) => l.id === listener.id));
    const upper = await orgKey('GET', `/v2/listeners/${listener.id}`, { headers: { 'X-Tenant-ID': server.workspaceId } });
    assert.equal(upper.status, 200);
  });

  test('the OpenAPI document describes the listener routes', async () => {
    const { anonymous } = ctx();
    const doc = (await anonymous('GET', '/openapi.json')).body;
    const collection = doc.paths['/v2/listeners'];
    const item = doc.paths['/v2/listeners/{listener_id}'];
    assert.ok(collection.get && collection.post && item.get && item.patch && item.delete);
    for (const operation of [collection.get, collection.post, item.get, item.patch, item.delete]) {
      assert.deepEqual(operation.tags, ['listeners']);
      assert.equal(typeof operation.summary, 'string');
    }
    assert.ok(collection.post.responses['201'] && collection.post.responses['409']);
    assert.ok(item.patch.responses['400'] && item.delete.responses['204'] && item.delete.responses['409']);
  });
});
