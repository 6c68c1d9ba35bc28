import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { client } from '../support/http.js';
import { createPostgresDatabase, startTestServer } from '../support/server.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';
import { skippedWithout, DATABASE_KINDS } from '../support/database.js';

type Body = Record<string, any>;

const imageBody = (overrides: Body = {}): Body => ({
  name: `idem-${randomUUID().slice(0, 8)}`,
  source: 'external_docker',
  source_config: { resource_spec: {} },
  source_revision_config: { image_uri: 'registry.example.com/agent:v1' },
  secrets: [{ name: 'OPENAI_API_KEY', value: `S3CR3T-${randomUUID()}` }],
  ...overrides,
});

/** The same JSON value with its keys in reverse order at the top level. */
const reordered = (body: Body): Body => Object.fromEntries(Object.entries(body).reverse());

describeOnEachDatabase('Idempotency-Key', (ctx) => {
  const keyed = (key: string) => ({ 'Idempotency-Key': key });
  const countNamed = async (name: string) => {
    const { api } = ctx();
    const listed = await api('GET', `/v2/deployments?name=${encodeURIComponent(name)}`);
    assert.equal(listed.status, 200, listed.text);
    return listed.body.resources.length as number;
  };

  test('a retried create replays the first answer, marked as a replay, and creates nothing more', async () => {
    const { api } = ctx();
    const key = randomUUID();
    const body = imageBody();
    const first = await api('POST', '/v2/deployments', { body, headers: keyed(key) });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // Key order does not make another request.
    const retry = await api('POST', '/v2/deployments', { body: reordered(body), headers: keyed(key) });
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(await countNamed(body.name), 1);
    // Without a key, the same body is a new request, and answers as before.
    const unkeyed = await api('POST', '/v2/deployments', { body });
    assert.equal(unkeyed.status, 409);
    assert.equal(unkeyed.body.code, 'deployment_name_taken');
  });

  /** A client (admin key) of a workspace of its own: listeners there do not change how other tests' deployments are placed. */
  const ownWorkspace = async () => {
    const { api, server } = ctx();
    const workspace = await api('POST', '/v1/workspaces', { body: { name: `idem-${randomUUID()}` } });
    const admin = await api('POST', '/v1/api-keys', { body: { name: 'admin', workspace_id: workspace.body.id, role: 'admin' } });
    assert.equal(admin.status, 201, admin.text);
    return { api: client(server.url, { key: admin.body.key }), workspaceId: workspace.body.id as string };
  };

  test('the same key with another body answers 422 idempotency_key_reused and creates nothing', async () => {
    const { api } = await ownWorkspace();
    const key = randomUUID();
    const first = await api('POST', '/v2/deployments', { body: imageBody(), headers: keyed(key) });
    assert.equal(first.status, 201, first.text);
    const other = imageBody();
    const reused = await api('POST', '/v2/deployments', { body: other, headers: keyed(key) });
    assert.equal(reused.status, 422, reused.text);
    assert.equal(reused.body.code, 'idempotency_key_reused');
    assert.equal(typeof reused.body.detail, 'string');
    assert.equal(await countNamed(other.name), 0);
    // Another operation with the key is another request too.
    const listener = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: `c-${randomUUID()}`, compute_config: {} },
      headers: keyed(key),
    });
    assert.equal(listener.status, 422, listener.text);
    assert.equal(listener.body.code, 'idempotency_key_reused');
  });

  test('concurrent requests with one key have one effect; the others replay or answer 409 in progress', async () => {
    const { api } = ctx();
    const key = randomUUID();
    const body = imageBody();
    const answers = await Promise.all(Array.from({ length: 8 }, () => api('POST', '/v2/deployments', { body, headers: keyed(key) })));
    const created = answers.filter((answer) => answer.status === 201);
    assert.ok(created.length >= 1, answers.map((answer) => answer.text).join('\n'));
    for (const answer of answers) {
      if (answer.status === 201) assert.equal(answer.body.id, created[0]!.body.id);
      else {
        assert.equal(answer.status, 409, answer.text);
        assert.equal(answer.body.code, 'idempotency_key_in_progress');
        assert.equal(answer.headers.get('retry-after'), '1');
      }
    }
    assert.equal(created.filter((answer) => answer.headers.get('idempotent-replayed') === null).length, 1);
    assert.equal(await countNamed(body.name), 1);
    const later = await api('POST', '/v2/deployments', { body, headers: keyed(key) });
    assert.equal(later.status, 201);
    assert.equal(later.body.id, created[0]!.body.id);
  });

  test('a hostile workspace reusing a key and body gets its own result, never the first workspace’s', async () => {
    const { api, server } = ctx();
    const { otherWorkspaceKey, otherOrganizationKey } = await otherTenants(ctx());
    const key = randomUUID();
    const body = imageBody();
    const mine = await api('POST', '/v2/deployments', { body, headers: keyed(key) });
    assert.equal(mine.status, 201, mine.text);
    for (const hostileKey of [otherWorkspaceKey, otherOrganizationKey]) {
      const hostile = await client(server.url, { key: hostileKey })('POST', '/v2/deployments', { body, headers: keyed(key) });
      assert.equal(hostile.status, 201, hostile.text);
      assert.equal(hostile.headers.get('idempotent-replayed'), null);
      assert.notEqual(hostile.body.id, mine.body.id);
      assert.doesNotMatch(hostile.text, new RegExp(mine.body.id));
    }
    const retry = await api('POST', '/v2/deployments', { body, headers: keyed(key) });
    assert.equal(retry.body.id, mine.body.id);
  });

  test('another API key of the same workspace cannot have an answer replayed to it', async () => {
    const { server } = ctx();
    const { api, workspaceId } = await ownWorkspace();
    const member = await api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: workspaceId, role: 'member' } });
    assert.equal(member.status, 201, member.text);
    const key = randomUUID();
    const body = { compute_type: 'k8s', compute_id: `c-${randomUUID()}`, compute_config: {} };
    const first = await api('POST', '/v2/listeners', { body, headers: keyed(key) });
    assert.equal(first.status, 201, first.text);
    const stolen = await client(server.url, { key: member.body.key })('POST', '/v2/listeners', { body, headers: keyed(key) });
    assert.equal(stolen.status, 422, stolen.text);
    assert.equal(stolen.body.code, 'idempotency_key_reused');
    assert.doesNotMatch(stolen.text, new RegExp(first.body.listener_key));
  });

  test('a replayed API key creation answers the key again, which is stored only encrypted', async () => {
    const { api, server } = ctx();
    const key = randomUUID();
    const body = { name: `replayed-${randomUUID()}`, workspace_id: server.workspaceId };
    const first = await api('POST', '/v1/api-keys', { body, headers: keyed(key) });
    assert.equal(first.status, 201, first.text);
    const retry = await api('POST', '/v1/api-keys', { body, headers: keyed(key) });
    assert.equal(retry.status, 201);
    assert.equal(retry.body.key, first.body.key);
    const listed = await api('GET', '/v1/api-keys');
    assert.equal(listed.body.filter((row: Body) => row.name === body.name).length, 1);
    const rows = await server.berth.db.selectFrom('idempotency_keys').selectAll().execute();
    assert.ok(rows.length > 0);
    assert.doesNotMatch(JSON.stringify(rows), new RegExp(first.body.key));
    assert.doesNotMatch(JSON.stringify(rows), /S3CR3T-/);
  });

  test('redeploy and revisions with a key make one revision', async () => {
    const { api } = ctx();
    const created = await api('POST', '/v2/deployments', { body: imageBody() });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const key = randomUUID();
    const revision = { source_revision_config: { image_uri: 'registry.example.com/agent:v2' } };
    const first = await api('POST', `/v2/deployments/${id}/revisions`, { body: revision, headers: keyed(key) });
    assert.equal(first.status, 201, first.text);
    const retry = await api('POST', `/v2/deployments/${id}/revisions`, { body: revision, headers: keyed(key) });
    assert.equal(retry.status, 201);
    assert.equal(retry.body.id, first.body.id);
    const listed = await api('GET', `/v2/deployments/${id}/revisions`);
    assert.equal(listed.body.resources.length, 2);
    // The same key on another deployment's path is another request.
    const elsewhere = await api('POST', '/v2/deployments', { body: imageBody() });
    const moved = await api('POST', `/v2/deployments/${elsewhere.body.id}/revisions`, { body: revision, headers: keyed(key) });
    assert.equal(moved.status, 422, moved.text);
    assert.equal(moved.body.code, 'idempotency_key_reused');
  });

  test('keys longer than 255 characters or not printable ASCII are a 422 in the API form', async () => {
    const { api } = ctx();
    for (const bad of ['k'.repeat(256), 'caf\u00e9']) {
      const answer = await api('POST', '/v2/deployments', { body: imageBody(), headers: keyed(bad) });
      assert.equal(answer.status, 422, answer.text);
      assert.equal(answer.body.code, 'validation_error');
      assert.deepEqual(answer.body.detail[0].loc, ['header', 'idempotency-key']);
    }
    const longest = await api('POST', '/v2/deployments', { body: imageBody(), headers: keyed('k'.repeat(255)) });
    assert.equal(longest.status, 201, longest.text);
  });

  test('errors the client caused are kept; after expiry the key is free again', async () => {
    const { api, server } = ctx();
    const taken = imageBody();
    assert.equal((await api('POST', '/v2/deployments', { body: taken })).status, 201);
    const key = randomUUID();
    const refused = await api('POST', '/v2/deployments', { body: taken, headers: keyed(key) });
    assert.equal(refused.status, 409);
    const again = await api('POST', '/v2/deployments', { body: taken, headers: keyed(key) });
    assert.equal(again.status, 409);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, refused.body);

    await server.berth.db
      .updateTable('idempotency_keys')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('key', '=', key)
      .execute();
    const fresh = imageBody();
    const afterExpiry = await api('POST', '/v2/deployments', { body: fresh, headers: keyed(key) });
    assert.equal(afterExpiry.status, 201, afterExpiry.text);
    // The sweep removes what expired and nothing else.
    const other = randomUUID();
    assert.equal((await api('POST', '/v2/deployments', { body: imageBody(), headers: keyed(other) })).status, 201);
    await server.berth.db
      .updateTable('idempotency_keys')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('key', '=', other)
      .execute();
    assert.ok((await server.berth.services.idempotency.sweep()) >= 1);
    const left = await server.berth.db.selectFrom('idempotency_keys').select('key').where('key', 'in', [key, other]).execute();
    assert.deepEqual(
      left.map((row) => row.key),
      [key],
    );
  });

  test('a key whose first request died is taken over by one retry once its lock has passed', async () => {
    const { server } = ctx();
    const { idempotency } = server.berth.services;
    const scope = randomUUID();
    const first = await idempotency.claim(scope, 'k', 'fingerprint');
    assert.equal(first.kind, 'run');
    assert.equal((await idempotency.claim(scope, 'k', 'fingerprint')).kind, 'in_progress');
    assert.equal((await idempotency.claim(scope, 'k', 'another')).kind, 'reused');
    await server.berth.db
      .updateTable('idempotency_keys')
      .set({ locked_until: new Date(Date.now() - 1000).toISOString() })
      .where('scope', '=', scope)
      .execute();
    const claims = await Promise.all([1, 2, 3].map(() => idempotency.claim(scope, 'k', 'fingerprint')));
    assert.deepEqual(claims.map((claim) => claim.kind).sort(), ['in_progress', 'in_progress', 'run']);
  });
});

for (const kind of DATABASE_KINDS) {
  test(`a retry after a restart replays the answer [${kind}]`, async (t) => {
    if (await skippedWithout(kind, t)) return;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-idem-'));
    const postgres = kind === 'postgres' ? await createPostgresDatabase() : undefined;
    t.after(async () => {
      await postgres?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const options = {
      engine: false,
      bootstrapApiKey: `berth_test_${randomUUID()}`,
      encryptionKey: randomUUID().replace(/-/g, '').repeat(2),
      ...(postgres ? { postgresUrl: postgres.url } : { env: { BERTH_DATA_DIR: dataDir } }),
    };
    const key = randomUUID();
    const body = imageBody();
    const before = await startTestServer(kind, options);
    let first;
    try {
      first = await client(before.url, { key: before.adminKey })('POST', '/v2/deployments', { body, headers: { 'Idempotency-Key': key } });
      assert.equal(first.status, 201, first.text);
    } finally {
      await before.close();
    }
    const restarted = await startTestServer(kind, options);
    try {
      const retry = await client(restarted.url, { key: restarted.adminKey })('POST', '/v2/deployments', { body, headers: { 'Idempotency-Key': key } });
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(retry.body, first.body);
    } finally {
      await restarted.close();
    }
  });
}
