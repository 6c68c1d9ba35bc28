import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';

describeOnEachDatabase('workspaces and API keys', (ctx) => {
  test('GET /ok needs no key', async () => {
    const res = await ctx().anonymous('GET', '/ok');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ok: true });
  });

  test('missing, wrong and revoked keys get 401 with a string detail', async () => {
    const { anonymous, api } = ctx();
    const missing = await anonymous('GET', '/v1/workspaces');
    assert.equal(missing.status, 401);
    assert.equal(typeof missing.body.detail, 'string');
    const wrong = await anonymous('GET', '/v1/workspaces', { key: 'berth_nope' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.detail, 'Invalid API key.');

    const created = await api('POST', '/v1/api-keys', { body: { name: 'temp', role: 'admin' } });
    assert.equal(created.status, 201);
    const temp = created.body.key as string;
    assert.equal((await anonymous('GET', '/v1/workspaces', { key: temp })).status, 200);
    assert.equal((await api('DELETE', `/v1/api-keys/${created.body.id}`)).status, 204);
    assert.equal((await anonymous('GET', '/v1/workspaces', { key: temp })).status, 401);
  });

  test('the key is accepted as a bearer token and the header name in any case', async () => {
    const { server, anonymous } = ctx();
    const bearer = await anonymous('GET', '/v1/workspaces', { headers: { Authorization: `Bearer ${server.adminKey}` } });
    assert.equal(bearer.status, 200);
    const lower = await anonymous('GET', '/v1/workspaces', { headers: { 'x-api-key': server.adminKey } });
    assert.equal(lower.status, 200);
  });

  test('creating a workspace and a key bound to it; the key is shown once and stored hashed', async () => {
    const { api, server } = ctx();
    const ws = await api('POST', '/v1/workspaces', { body: { name: 'staging' } });
    assert.equal(ws.status, 201);
    assert.equal(ws.body.name, 'staging');
    assert.equal((await api('POST', '/v1/workspaces', { body: { name: 'staging' } })).status, 409);

    const key = await api('POST', '/v1/api-keys', { body: { name: 'ci', workspace_id: ws.body.id } });
    assert.equal(key.status, 201);
    assert.match(key.body.key, /^berth_/);
    assert.equal(key.body.workspace_id, ws.body.id);
    assert.equal(key.body.role, 'member');

    const listed = await api('GET', '/v1/api-keys');
    const entry = listed.body.find((k: { id: string }) => k.id === key.body.id);
    assert.ok(entry);
    assert.equal(entry.key, undefined, 'a listed key never carries the key itself');
    const rows = await server.berth.db.selectFrom('api_keys').select(['key_hash']).execute();
    assert.ok(rows.every((r) => r.key_hash !== key.body.key && /^[0-9a-f]{64}$/.test(r.key_hash)));

    // A member key may not administer.
    const member = client(server.url, { key: key.body.key });
    assert.equal((await member('GET', '/v1/api-keys')).status, 403);
    assert.equal((await api('POST', '/v1/api-keys', { body: { workspace_id: '00000000-0000-4000-8000-000000000000' } })).status, 404);
  });

  test('another organization sees none of this organization', async () => {
    const { server } = ctx();
    const other = await otherTenants(ctx());
    const otherOrg = client(server.url, { key: other.otherOrganizationKey });
    const workspaces = await otherOrg('GET', '/v1/workspaces');
    assert.equal(workspaces.status, 200);
    assert.ok(workspaces.body.every((w: { id: string }) => w.id !== server.workspaceId));
    const ownKeys = await ctx().api('GET', '/v1/api-keys');
    const revoke = await otherOrg('DELETE', `/v1/api-keys/${ownKeys.body[0].id}`);
    assert.equal(revoke.status, 404);
  });

  test('malformed JSON and wrong types are 422 in FastAPI form', async () => {
    const { api } = ctx();
    const malformed = await api('POST', '/v1/workspaces', { rawBody: '{"name": ' });
    assert.equal(malformed.status, 422);
    assert.equal(malformed.body.detail[0].type, 'json_invalid');
    const wrongType = await api('POST', '/v1/workspaces', { body: { name: 5 } });
    assert.equal(wrongType.status, 422);
    assert.deepEqual(wrongType.body.detail[0].loc, ['body', 'name']);
    assert.equal(wrongType.body.detail[0].type, 'string_type');
    const missing = await api('POST', '/v1/workspaces', { body: {} });
    assert.deepEqual(missing.body.detail[0], { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} });
    const noBody = await api('POST', '/v1/workspaces');
    assert.equal(noBody.status, 422);
    assert.deepEqual(noBody.body.detail[0].loc, ['body']);
    const badId = await api('DELETE', '/v1/api-keys/not-a-uuid');
    assert.equal(badId.status, 422);
    assert.deepEqual(badId.body.detail[0].loc, ['path', 'key_id']);
    assert.equal(badId.body.detail[0].type, 'uuid_parsing');
  });

  test('routes are served under /api-host and unknown paths are JSON 404s', async () => {
    const { api } = ctx();
    assert.equal((await api('GET', '/api-host/v1/workspaces')).status, 200);
    const unknown = await api('GET', '/v9/nothing');
    assert.equal(unknown.status, 404);
    assert.equal(typeof unknown.body.detail, 'string');
  });

  test('the OpenAPI document and the reference page are served', async () => {
    const { anonymous } = ctx();
    const doc = await anonymous('GET', '/openapi.json');
    assert.equal(doc.status, 200);
    assert.equal(doc.body.openapi, '3.1.0');
    assert.ok(doc.body.paths['/v1/workspaces']);
    assert.equal(doc.body.paths['/api-host/v1/workspaces'], undefined);
    const page = await anonymous('GET', '/docs');
    assert.equal(page.status, 200);
  });
});
