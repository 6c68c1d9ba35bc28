import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';

const deploymentWith = (secrets: { name: string; value: string }[]) => ({
  name: `merge-${randomUUID().slice(0, 8)}`,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets,
});

const byName = (secrets: { name: string; value: string | null }[]) => Object.fromEntries(secrets.map((s) => [s.name, s.value]));

describeOnEachDatabase('PATCH /v2/deployments/{id}/secrets merges by name', (ctx) => {
  test('sets, replaces and removes by name, keeps the others, makes one revision and one audit row with names only', async () => {
    const { api } = ctx();
    const created = await api('POST', '/v2/deployments', {
      body: deploymentWith([
        { name: 'A', value: 'a1' },
        { name: 'B', value: 'b1' },
        { name: 'C', value: 'c1' },
      ]),
    });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const merged = await api('PATCH', `/v2/deployments/${id}/secrets`, {
      body: {
        set: [
          { name: 'B', value: 'value-b2' },
          { name: 'D', value: 'value-d1' },
        ],
        remove: ['C', 'NOT_THERE'],
      },
    });
    assert.equal(merged.status, 200, merged.text);
    assert.deepEqual(byName(merged.body.secrets), { A: 'a1', B: 'value-b2', D: 'value-d1' });
    assert.notEqual(merged.body.latest_revision_id, created.body.latest_revision_id, 'a change of secrets makes a new revision');
    assert.ok(merged.headers.get('etag'));
    const read = await api('GET', `/v2/deployments/${id}`);
    assert.deepEqual(byName(read.body.secrets), { A: 'a1', B: 'value-b2', D: 'value-d1' });

    const audit = await api('GET', `/v1/audit-log?target_id=${id}&action=deployment.update&limit=10`);
    assert.equal(audit.status, 200, audit.text);
    assert.equal(audit.body.resources.length, 1);
    assert.deepEqual(audit.body.resources[0].secret_names, ['B', 'C', 'D', 'NOT_THERE']);
    assert.ok(!audit.text.includes('value-b2') && !audit.text.includes('value-d1'), 'no value in the audit log');

    const same = await api('PATCH', `/v2/deployments/${id}/secrets`, { body: { set: [{ name: 'A', value: 'a1' }] } });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.latest_revision_id, merged.body.latest_revision_id, 'no change, no revision');

    const emptied = await api('PATCH', `/v2/deployments/${id}/secrets`, { body: { remove: ['A', 'B', 'D'] } });
    assert.equal(emptied.status, 200, emptied.text);
    assert.deepEqual(emptied.body.secrets, [], 'the last secret can be removed');
    assert.notEqual(emptied.body.latest_revision_id, merged.body.latest_revision_id);
  });

  test('422 for a name both set and removed, a bad name, too many secrets; 400 for a reserved or duplicate name; 412 on a stale If-Match', async () => {
    const { api } = ctx();
    const created = await api('POST', '/v2/deployments', { body: deploymentWith([{ name: 'KEEP', value: 'k' }]) });
    const path = `/v2/deployments/${created.body.id}/secrets`;
    const both = await api('PATCH', path, { body: { set: [{ name: 'X', value: 'hush-x' }], remove: ['X'] } });
    assert.equal(both.status, 422, both.text);
    assert.deepEqual(both.body.detail[0].loc, ['body', 'set', 0, 'name']);
    assert.ok(!both.text.includes('hush-x'), 'no value in the error');
    assert.equal((await api('PATCH', path, { body: { set: [{ name: '1bad', value: 'v' }] } })).status, 422);
    assert.equal((await api('PATCH', path, { body: { remove: ['bad-name'] } })).status, 422);
    // As for PATCH and create: the secret rules answer 400 secrets_invalid.
    for (const set of [
      [{ name: 'POSTGRES_URI', value: '1' }],
      [
        { name: 'D', value: '1' },
        { name: 'D', value: '2' },
      ],
    ]) {
      const refused = await api('PATCH', path, { body: { set } });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.code, 'secrets_invalid');
    }
    const many = Array.from({ length: 200 }, (_, i) => ({ name: `S${i}`, value: 'v' }));
    const over = await api('PATCH', path, { body: { set: many } });
    assert.equal(over.status, 422, 'KEEP and 200 more make 201');
    const read = await api('GET', `/v2/deployments/${created.body.id}`);
    assert.deepEqual(byName(read.body.secrets), { KEEP: 'k' }, 'nothing changed');
    // The first revision's deploy moves the deployment (and its tag) until it ends: take the tag after.
    const first = await api('GET', `/v2/deployments/${created.body.id}/revisions/${read.body.latest_revision_id}?wait_for_terminal=60`);
    assert.equal(first.status, 200, first.text);
    const etag = (await api('GET', `/v2/deployments/${created.body.id}`)).headers.get('etag')!;
    assert.equal((await api('PATCH', path, { body: { set: [{ name: 'NEW', value: 'n' }] }, headers: { 'If-Match': etag } })).status, 200);
    const stale = await api('PATCH', path, { body: { remove: ['NEW'] }, headers: { 'If-Match': etag } });
    assert.equal(stale.status, 412, stale.text);
    assert.equal(stale.body.code, 'resource_changed');
  });

  test('another workspace or organization gets 404; read-only and deployer keys 403; nothing changes', async () => {
    const { api, server } = ctx();
    const created = await api('POST', '/v2/deployments', { body: deploymentWith([{ name: 'OWN', value: 'own-value' }]) });
    const id = created.body.id as string;
    const path = `/v2/deployments/${id}/secrets`;
    const other = await otherTenants(ctx());
    for (const key of [other.otherWorkspaceKey, other.otherOrganizationKey]) {
      const res = await client(server.url, { key })('PATCH', path, { body: { set: [{ name: 'OWN', value: 'stolen' }], remove: [] } });
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.code, 'deployment_not_found');
    }
    const readOnly = (await api('POST', '/v1/api-keys', { body: { name: 'reader', role: 'read_only', workspace_id: server.workspaceId } })).body.key;
    const deployer = (await api('POST', '/v1/api-keys', { body: { name: 'ship', role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [id] } }))
      .body.key;
    for (const key of [readOnly, deployer]) {
      const res = await client(server.url, { key })('PATCH', path, { body: { remove: ['OWN'] } });
      assert.equal(res.status, 403, res.text);
    }
    const read = await api('GET', `/v2/deployments/${id}`);
    assert.deepEqual(byName(read.body.secrets), { OWN: 'own-value' });
  });
});
