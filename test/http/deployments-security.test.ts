import assert from 'node:assert/strict';

import { test } from 'node:test';
import { client } from '../support/http.js';
import { otherTenants } from '../support/suite.js';

import { UNKNOWN_ID, MARK, secretValue, type Body, dockerBody, createDeployment, patch, describeDeployments } from '../support/deployments.js';

/** Who may see deployments (other workspaces and organizations, keys), /api-host, and secrets at rest. */
describeDeployments('who may see deployments, and their secrets', (ctx) => {
  // Every route against no key, a wrong key and other tenants' keys: the generated cases of test/http/openapi.test.ts.
  test('security: other workspaces and organizations find nothing by id or name, and a bound key cannot switch workspace', async () => {
    const { api, server } = ctx();
    const created = await createDeployment(api);
    const other = await otherTenants(ctx());
    const otherWorkspace = client(server.url, { key: other.otherWorkspaceKey });
    const otherOrganization = client(server.url, { key: other.otherOrganizationKey });
    const path = `/v2/deployments/${created.id}`;
    for (const [name, caller] of [
      ['other workspace', otherWorkspace],
      ['other organization', otherOrganization],
    ] as const) {
      // As the public service words it.
      const res = await caller('GET', path);
      assert.deepEqual(res.body, { detail: `Deployment ID ${created.id} not found.`, code: 'deployment_not_found' });
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

    // Every workspace route answers 403 without a workspace (the generated cases of test/http/openapi.test.ts), as the public service words it.
    const unnamed = await orgKey('POST', '/v2/deployments', { body: dockerBody() });
    assert.equal(unnamed.status, 403, unnamed.text);
    assert.match(unnamed.body.detail, /requires workspace specification/);

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

    // Another organization's workspace is forbidden on every route (the generated cases), and says so.
    const foreign = await orgKey('GET', path, { tenant: other.otherOrganizationWorkspaceId });
    assert.equal(foreign.status, 403, foreign.text);
    assert.doesNotMatch(foreign.body.detail, /requires workspace specification|not enabled/i);
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
});
