import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client } from '../support/http.js';
import { describeOnEachDatabase } from '../support/suite.js';

const SECRET_VALUE = 'audit-secret-value-4f1c';

const deployment = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: {},
  source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
  secrets: [{ name: 'OPENAI_API_KEY', value: SECRET_VALUE }],
});

type Entry = { action: string; target: { type: string; id: string; name: string | null }; [field: string]: any };

describeOnEachDatabase('the audit log', (ctx) => {
  test('one row per change, in who/what/where terms, with names and never values; none for a refused request', async () => {
    const { api, server } = ctx();
    const stamp = `${Date.now()}`;
    const readOnlyKey = (await api('POST', '/v1/api-keys', { body: { name: 'auditor', role: 'read_only', workspace_id: server.workspaceId } })).body;
    const auditor = client(server.url, { key: readOnlyKey.key });
    const before = (await auditor('GET', '/v1/audit-log?limit=100')).body.resources as Entry[];

    const created = await api('POST', '/v2/deployments', { body: deployment(`audit-${stamp}`), headers: { 'X-Request-Id': `req-create-${stamp}` } });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { secrets: [{ name: 'OTHER_TOKEN', value: SECRET_VALUE }] } });
    assert.equal(patched.status, 200, patched.text);
    const revision = await api('POST', `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { image_uri: 'registry.example.com/agent:v2' } } });
    assert.equal(revision.status, 201, revision.text);

    // Refused or failed: nothing is written.
    const deployerKey = (
      await api('POST', '/v1/api-keys', { body: { name: 'ship', role: 'deployer', workspace_id: server.workspaceId, deployment_ids: [id] } })
    ).body;
    const deployer = client(server.url, { key: deployerKey.key });
    assert.equal((await deployer('POST', `/v2/deployments/${id}/revisions`, { body: { secrets: [{ name: 'X', value: SECRET_VALUE }] } })).status, 403);
    assert.equal((await auditor('PATCH', `/v2/deployments/${id}`, { body: { display_name: 'no' } })).status, 403);
    assert.equal((await api('PATCH', `/v2/deployments/${id}`, { body: { source: 'github' } })).status >= 400, true);
    assert.equal((await api('POST', '/v2/deployments', { body: deployment(`audit-${stamp}`) })).status, 409);

    const after = (await auditor('GET', '/v1/audit-log?limit=100')).body.resources as Entry[];
    const added = after.slice(0, after.length - before.length);
    // The read-only key sees its workspace's rows, not the organization's own (the keys made above).
    assert.deepEqual(
      added.map((entry) => entry.action),
      ['revision.create', 'deployment.update', 'deployment.create'],
    );
    const [newRevision, update, create] = added as [Entry, Entry, Entry];
    assert.deepEqual(create.target, { type: 'deployment', id, name: `audit-${stamp}` });
    assert.equal(create.request_id, `req-create-${stamp}`);
    assert.equal(create.workspace_id, server.workspaceId);
    assert.equal(create.actor.type, 'api_key');
    assert.equal(create.actor.key_name, 'bootstrap');
    assert.equal(create.actor.role, 'admin');
    assert.ok(create.client_address, 'the client address is recorded');
    assert.equal(create.outcome, 'success');
    assert.deepEqual(create.secret_names, ['OPENAI_API_KEY']);
    assert.ok(create.changed_fields.includes('secrets') && create.changed_fields.includes('source_revision_config'));
    assert.deepEqual(update.changed_fields, ['secrets']);
    assert.deepEqual(update.secret_names, ['OTHER_TOKEN']);
    assert.equal(newRevision.target.id, revision.body.id);
    assert.deepEqual(newRevision.secret_names, []);

    // The organization's rows (key creations) are for admin keys.
    const adminView = (await api('GET', '/v1/audit-log?action=api_key.create&limit=100')).body.resources as Entry[];
    assert.ok(adminView.some((entry) => entry.target.id === deployerKey.id && entry.workspace_id === null));

    const everything = (await api('GET', '/v1/audit-log?limit=100')).text;
    assert.ok(!everything.includes(SECRET_VALUE), 'a secret value reached the audit log');
    assert.ok(!everything.includes(deployerKey.key), 'a key reached the audit log');
  });

  test('filters by actor, action, target and time, pages, and is refused to member keys and to other workspaces', async () => {
    const { api, server } = ctx();
    const stamp = `${Date.now()}`;
    const start = new Date().toISOString();
    const first = (await api('POST', '/v2/deployments', { body: deployment(`audit-f1-${stamp}`) })).body;
    const second = (await api('POST', '/v2/deployments', { body: deployment(`audit-f2-${stamp}`) })).body;
    const list = async (query: string) => (await api('GET', `/v1/audit-log?${query}`)).body.resources as Entry[];

    assert.deepEqual(
      (await list(`target_id=${first.id}`)).map((entry) => entry.action),
      ['deployment.create'],
    );
    assert.equal((await list(`action=deployment.create&since=${encodeURIComponent(start)}`)).length, 2);
    assert.equal((await list(`action=deployment.create&until=${encodeURIComponent(start)}&target_id=${second.id}`)).length, 0);
    const own = (await api('GET', '/v1/api-keys')).body.find((key: { name: string }) => key.name === 'bootstrap');
    assert.ok((await list(`actor=${own.id}&target_type=deployment&limit=100`)).length >= 2);
    assert.equal((await list('actor=00000000-0000-4000-8000-000000000000')).length, 0);
    const page1 = await api('GET', `/v1/audit-log?since=${encodeURIComponent(start)}&limit=1`);
    const page2 = await list(`since=${encodeURIComponent(start)}&limit=1&offset=${page1.body.offset}`);
    assert.equal(page1.body.resources.length, 1);
    assert.notEqual(page1.body.resources[0].id, page2[0]!.id);

    const member = client(server.url, { key: (await api('POST', '/v1/api-keys', { body: { name: 'm', workspace_id: server.workspaceId } })).body.key });
    const refused = await member('GET', '/v1/audit-log');
    assert.deepEqual([refused.status, refused.body.code], [403, 'role_forbids']);

    // Hostile: workspace B's keys never see A's rows, and cannot ask for them.
    const workspaceB = (await api('POST', '/v1/workspaces', { body: { name: `audit-b-${stamp}` } })).body;
    await api('POST', '/v2/deployments', { body: deployment(`audit-b-${stamp}`), tenant: workspaceB.id });
    const readerB = client(server.url, {
      key: (await api('POST', '/v1/api-keys', { body: { name: 'b-reader', role: 'read_only', workspace_id: workspaceB.id } })).body.key,
    });
    const seenByB = await readerB('GET', '/v1/audit-log?limit=100');
    assert.equal(seenByB.status, 200);
    assert.deepEqual(
      seenByB.body.resources.map((entry: Entry) => entry.target.name),
      [`audit-b-${stamp}`],
    );
    assert.equal((await readerB('GET', `/v1/audit-log?target_id=${first.id}`)).body.resources.length, 0);
    const viaTenant = await readerB('GET', '/v1/audit-log', { tenant: server.workspaceId });
    assert.deepEqual([viaTenant.status, viaTenant.body.code], [403, 'workspace_forbidden']);
    const org = await server.berth.services.tenancy.createOrganization(`audit-org-${stamp}`);
    const foreign = await client(server.url, { key: org!.apiKey })('GET', '/v1/audit-log?limit=100');
    assert.equal(foreign.status, 200);
    assert.ok(!foreign.text.includes(first.id) && !foreign.text.includes(`audit-b-${stamp}`));

    // No route changes a row.
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) assert.equal((await api(method, '/v1/audit-log', { body: {} })).status, 404, method);
  });

  test('deletes, revocations and organization changes are recorded too, with names only', async () => {
    const { api, server } = ctx();
    const stamp = `${Date.now()}`;
    const made = (await api('POST', '/v2/deployments', { body: deployment(`audit-d-${stamp}`) })).body;
    assert.equal((await api('DELETE', `/v2/deployments/${made.id}`)).status, 204);
    const key = (await api('POST', '/v1/api-keys', { body: { name: `gone-${stamp}`, workspace_id: server.workspaceId } })).body;
    assert.equal((await api('DELETE', `/v1/api-keys/${key.id}`)).status, 204);
    const providerSecret = `oauth-secret-${stamp}`;
    const provider = await api('POST', '/v2/auth/providers', {
      body: {
        provider_id: `p${stamp}`,
        name: 'P',
        client_id: 'c',
        client_secret: providerSecret,
        auth_url: 'https://e.example/a',
        token_url: 'https://e.example/t',
      },
    });
    assert.equal(provider.status, 200, provider.text);
    assert.equal((await api('PATCH', `/v2/auth/providers/p${stamp}`, { body: { client_secret: `${providerSecret}-2` } })).status, 200);

    const rows = (await api('GET', '/v1/audit-log?limit=100')).body.resources as Entry[];
    const of = (id: string) => rows.filter((entry) => entry.target.id === id).map((entry) => entry.action);
    assert.deepEqual(of(made.id), ['deployment.delete', 'deployment.create']);
    assert.deepEqual(of(key.id), ['api_key.revoke', 'api_key.create']);
    assert.deepEqual(of(`p${stamp}`), ['oauth_provider.update', 'oauth_provider.create']);
    const update = rows.find((entry) => entry.action === 'oauth_provider.update' && entry.target.id === `p${stamp}`)!;
    assert.deepEqual(update.changed_fields, ['client_secret']);
    const text = JSON.stringify(rows);
    assert.ok(!text.includes(providerSecret) && !text.includes(SECRET_VALUE) && !text.includes(key.key));
  });

  test('an upload URL handed out is recorded, without its token; one refused to another workspace is not', async () => {
    const { api, server } = ctx();
    const stamp = `${Date.now()}`;
    const made = await api('POST', '/v2/deployments', {
      body: { name: `audit-u-${stamp}`, source: 'internal_source', source_config: { deployment_type: 'dev' }, source_revision_config: {}, secrets: [] },
    });
    assert.equal(made.status, 201, made.text);
    const url = await api('POST', `/v2/deployments/${made.body.id}/upload-url`);
    assert.equal(url.status, 200, url.text);
    const token = new URL(url.body.upload_url as string).searchParams.get('token')!;

    const other = (await api('POST', '/v1/workspaces', { body: { name: `audit-u-other-${stamp}` } })).body;
    const theirKey = (await api('POST', '/v1/api-keys', { body: { name: `u-${stamp}`, workspace_id: other.id } })).body;
    const theirs = client(server.url, { key: theirKey.key });
    assert.equal((await theirs('POST', `/v2/deployments/${made.body.id}/upload-url`)).status, 404);

    const rows = (await api('GET', `/v1/audit-log?target_id=${made.body.id}&limit=100`)).body.resources as Entry[];
    assert.deepEqual(
      rows.map((entry) => entry.action),
      ['deployment.upload_url_issue', 'deployment.create'],
    );
    assert.deepEqual(rows[0]!.target, { type: 'deployment', id: made.body.id, name: `audit-u-${stamp}` });
    assert.ok(!JSON.stringify(rows).includes(token), 'the upload token is not in the audit log');
  });

  test('retention removes rows older than the setting, and only those', async () => {
    const { api, server } = ctx();
    const made = (await api('POST', '/v2/deployments', { body: deployment(`audit-r-${Date.now()}`) })).body;
    const rowsOf = async () => (await api('GET', `/v1/audit-log?target_id=${made.id}`)).body.resources.length as number;
    assert.equal(await rowsOf(), 1);
    assert.equal(await server.berth.services.audit.prune(365), 0);
    assert.equal(await rowsOf(), 1);
    const removed = await server.berth.services.audit.prune(365, Date.now() + 366 * 86_400_000);
    assert.ok(removed >= 1);
    assert.equal(await rowsOf(), 0);
  });
});
