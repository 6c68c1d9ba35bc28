import assert from 'node:assert/strict';

import { test } from 'node:test';
import { client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';

import { UNKNOWN_ID, type Body, dockerBody, createDeployment, patch, waitUntilGone, assertIssue } from '../support/deployments.js';

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
