import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { type ApiResponse, client } from '../support/http.js';
import { resolved } from '../support/openapi.js';
import { type SuiteContext, describeOnEachDatabase, otherTenants } from '../support/suite.js';

const FIELDS = [
  'auth_url',
  'client_id',
  'code_challenge_method',
  'created_at',
  'id',
  'name',
  'organization_id',
  'provider_id',
  'provider_type',
  'token_url',
  'updated_at',
  'uses_pkce',
];

describeOnEachDatabase('OAuth providers', (ctx) => {
  /** Every secret sent in this suite; none may ever show up in an answer or a log line. */
  const secrets: string[] = [];
  const newSecret = () => {
    const secret = `oauth-secret-${randomUUID()}`;
    secrets.push(secret);
    return secret;
  };
  const body = (providerId: string, extra: Record<string, unknown> = {}) => ({
    provider_id: providerId,
    name: 'GitHub',
    client_id: 'client-123',
    client_secret: newSecret(),
    auth_url: 'https://github.com/login/oauth/authorize',
    token_url: 'https://github.com/login/oauth/access_token',
    ...extra,
  });
  const assertNoSecret = (res: ApiResponse) => {
    // A 422 may name the field (redacted); a success never does.
    if (res.status < 400) assert.ok(!res.text.includes('client_secret'), `answer names client_secret: ${res.text}`);
    for (const secret of secrets) assert.ok(!res.text.includes(secret), 'answer carries a client secret');
  };
  const storedRow = (id: string) => ctx().server.berth.db.selectFrom('oauth_providers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const principal = async ({ server }: SuiteContext) => {
    const found = await server.berth.services.tenancy.authenticate(server.adminKey);
    assert.ok(found);
    return found;
  };

  test('create answers 200 with every field and the defaults, never the secret', async () => {
    const { api, server } = ctx();
    const sent = body('github');
    const res = await api('POST', '/v2/auth/providers', { body: sent });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), FIELDS);
    assert.match(res.body.id, /^[0-9a-f-]{36}$/);
    assert.equal(res.body.organization_id, server.organizationId);
    assert.equal(res.body.provider_id, 'github');
    assert.equal(res.body.name, 'GitHub');
    assert.equal(res.body.client_id, 'client-123');
    assert.equal(res.body.auth_url, sent.auth_url);
    assert.equal(res.body.token_url, sent.token_url);
    assert.equal(res.body.uses_pkce, false);
    assert.equal(res.body.code_challenge_method, 'S256');
    assert.equal(res.body.provider_type, null);
    assert.ok(!Number.isNaN(Date.parse(res.body.created_at)));
    assert.equal(res.body.updated_at, res.body.created_at);
    assertNoSecret(res);

    const row = await storedRow(res.body.id);
    assert.notEqual(row.client_secret_encrypted, sent.client_secret);
    assert.ok(!row.client_secret_encrypted.includes(sent.client_secret));
    assert.equal(await server.berth.services.oauthProviders.clientSecret(await principal(ctx()), 'github'), sent.client_secret);
  });

  test('given options are kept; explicit nulls take the defaults', async () => {
    const { api } = ctx();
    const given = await api('POST', '/v2/auth/providers', {
      body: body('google', { uses_pkce: true, code_challenge_method: 'plain', provider_type: 'oidc' }),
    });
    assert.equal(given.status, 200);
    assert.equal(given.body.uses_pkce, true);
    assert.equal(given.body.code_challenge_method, 'plain');
    assert.equal(given.body.provider_type, 'oidc');
    const nulls = await api('POST', '/v2/auth/providers', {
      body: body('nulls', { uses_pkce: null, code_challenge_method: null, provider_type: null }),
    });
    assert.equal(nulls.status, 200);
    assert.equal(nulls.body.uses_pkce, false);
    assert.equal(nulls.body.code_challenge_method, 'S256');
  });

  test('list is a bare array and get finds by provider_id', async () => {
    const { api } = ctx();
    const list = await api('GET', '/v2/auth/providers');
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    assert.ok(list.body.some((p: { provider_id: string }) => p.provider_id === 'github'));
    assertNoSecret(list);
    const one = await api('GET', '/v2/auth/providers/github');
    assert.equal(one.status, 200);
    assert.equal(one.body.provider_id, 'github');
    assertNoSecret(one);
  });

  test('PATCH changes what is given, leaves nulls and absent fields, and moves updated_at', async () => {
    const { api, server } = ctx();
    const before = (await api('GET', '/v2/auth/providers/github')).body;
    const renamed = await api('PATCH', '/v2/auth/providers/github', { body: { name: 'GH' } });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'GH');
    assert.equal(renamed.body.client_id, before.client_id);
    assert.equal(renamed.body.created_at, before.created_at);
    assert.ok(renamed.body.updated_at > before.updated_at);
    assertNoSecret(renamed);

    const nulls = await api('PATCH', '/v2/auth/providers/github', {
      body: { name: null, client_id: null, client_secret: null, auth_url: null, token_url: null, uses_pkce: null, code_challenge_method: null },
    });
    assert.equal(nulls.status, 200);
    for (const field of ['name', 'client_id', 'auth_url', 'token_url', 'uses_pkce', 'code_challenge_method', 'provider_type']) {
      assert.equal(nulls.body[field], renamed.body[field], field);
    }

    const all = await api('PATCH', '/v2/auth/providers/github', {
      body: { client_id: 'client-456', auth_url: 'https://example.com/a', token_url: 'http://example.com/t', uses_pkce: true, code_challenge_method: 'plain' },
    });
    assert.equal(all.status, 200);
    assert.equal(all.body.client_id, 'client-456');
    assert.equal(all.body.auth_url, 'https://example.com/a');
    assert.equal(all.body.token_url, 'http://example.com/t');
    assert.equal(all.body.uses_pkce, true);
    assert.equal(all.body.code_challenge_method, 'plain');

    const oldCiphertext = (await storedRow(before.id)).client_secret_encrypted;
    const secret = newSecret();
    const rekeyed = await api('PATCH', '/v2/auth/providers/github', { body: { client_secret: secret } });
    assert.equal(rekeyed.status, 200);
    assertNoSecret(rekeyed);
    const row = await storedRow(before.id);
    assert.notEqual(row.client_secret_encrypted, oldCiphertext);
    assert.ok(!row.client_secret_encrypted.includes(secret));
    assert.equal(await server.berth.services.oauthProviders.clientSecret(await principal(ctx()), 'github'), secret);
  });

  test('a ciphertext copied onto another provider does not decrypt', async () => {
    const { api, server } = ctx();
    const a = await api('POST', '/v2/auth/providers', { body: body('copy-a') });
    const b = await api('POST', '/v2/auth/providers', { body: body('copy-b') });
    const stolen = (await storedRow(a.body.id)).client_secret_encrypted;
    await server.berth.db.updateTable('oauth_providers').set({ client_secret_encrypted: stolen }).where('id', '=', b.body.id).execute();
    await assert.rejects(server.berth.services.oauthProviders.clientSecret(await principal(ctx()), 'copy-b'));
  });

  test('duplicate provider_id is 409 and unknown providers are 404', async () => {
    const { api } = ctx();
    const duplicate = await api('POST', '/v2/auth/providers', { body: body('github') });
    assert.equal(duplicate.status, 409);
    assert.match(duplicate.body.detail, /already exists/);
    assertNoSecret(duplicate);

    const racing = await Promise.all([1, 2, 3].map(() => api('POST', '/v2/auth/providers', { body: body('racing') })));
    assert.deepEqual(racing.map((r) => r.status).sort(), [200, 409, 409]);

    const expected = { detail: "OAuth provider 'nope' not found.", code: 'provider_not_found' };
    assert.deepEqual((await api('GET', '/v2/auth/providers/nope')).body, expected);
    for (const [method, options] of [
      ['GET', {}],
      ['PATCH', { body: { name: 'x' } }],
      ['DELETE', {}],
    ] as const) {
      const res = await api(method, '/v2/auth/providers/nope', options);
      assert.equal(res.status, 404, method);
      assert.deepEqual(res.body, expected);
    }
  });

  test('validation: missing fields, wrong types and bad URLs are 422; unknown fields are ignored', async () => {
    const { api } = ctx();
    const { client_secret: _omitted, ...withoutSecret } = body('invalid');
    const missing = await api('POST', '/v2/auth/providers', { body: withoutSecret });
    assert.equal(missing.status, 422);
    assert.ok(missing.body.detail.some((d: { loc: unknown; type: string }) => d.type === 'missing' && JSON.stringify(d.loc) === '["body","client_secret"]'));

    const missingName = await api('POST', '/v2/auth/providers', { body: { ...body('invalid'), name: undefined } });
    assert.equal(missingName.status, 422);
    assertNoSecret(missingName);

    const wrongType = await api('POST', '/v2/auth/providers', { body: body('invalid', { uses_pkce: 'yes' }) });
    assert.equal(wrongType.status, 422);
    assert.deepEqual(wrongType.body.detail[0].loc, ['body', 'uses_pkce']);
    assert.equal(wrongType.body.detail[0].type, 'bool_type');
    assert.equal((await api('PATCH', '/v2/auth/providers/github', { body: { name: 5 } })).status, 422);
    assert.equal((await api('PATCH', '/v2/auth/providers/github')).status, 422);

    for (const url of ['ftp://example.com/x', 'not a url', 'javascript:alert(1)']) {
      const res = await api('POST', '/v2/auth/providers', { body: body('invalid', { auth_url: url }) });
      assert.equal(res.status, 422, url);
      assert.deepEqual(res.body.detail[0].loc, ['body', 'auth_url']);
    }
    for (const providerId of ['', '-leading', 'has space', 'a'.repeat(101)]) {
      const res = await api('POST', '/v2/auth/providers', { body: body(providerId) });
      assert.equal(res.status, 422, JSON.stringify(providerId));
      assert.deepEqual(res.body.detail[0].loc, ['body', 'provider_id']);
    }

    const extra = await api('POST', '/v2/auth/providers', { body: body('extra', { unknown_field: [1, 2], client_secret_hint: 'x' }) });
    assert.equal(extra.status, 200);
    assert.equal(extra.body.unknown_field, undefined);
    const patched = await api('PATCH', '/v2/auth/providers/extra', { body: { name: 'Extra', another_unknown: true } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.name, 'Extra');
  });

  test('DELETE answers 200 with a message, then the provider is gone', async () => {
    const { api } = ctx();
    assert.equal((await api('POST', '/v2/auth/providers', { body: body('doomed') })).status, 200);
    const deleted = await api('DELETE', '/v2/auth/providers/doomed', { headers: { 'Content-Type': 'application/json' } });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { message: "OAuth provider 'doomed' deleted." });
    assert.equal((await api('GET', '/v2/auth/providers/doomed')).status, 404);
    assert.equal((await api('DELETE', '/v2/auth/providers/doomed')).status, 404);
    // The provider_id is free again.
    assert.equal((await api('POST', '/v2/auth/providers', { body: body('doomed') })).status, 200);
  });

  test('lowercase x-api-key, bearer and the /api-host prefix work', async () => {
    const { anonymous, api, server } = ctx();
    const lower = await anonymous('GET', '/v2/auth/providers/github', { headers: { 'x-api-key': server.adminKey } });
    assert.equal(lower.status, 200);
    const bearer = await anonymous('GET', '/v2/auth/providers', { headers: { Authorization: `Bearer ${server.adminKey}` } });
    assert.equal(bearer.status, 200);
    const created = await api('POST', '/api-host/v2/auth/providers', { body: body('hosted') });
    assert.equal(created.status, 200);
    assert.equal((await api('GET', '/api-host/v2/auth/providers/hosted')).status, 200);
    assert.equal((await api('PATCH', '/api-host/v2/auth/providers/hosted', { body: { name: 'H' } })).body.name, 'H');
    assert.equal((await api('DELETE', '/api-host/v2/auth/providers/hosted')).status, 200);
  });

  test('security: keys are required, organizations are isolated, workspaces share the organization', async () => {
    const { anonymous, server } = ctx();
    assert.equal((await anonymous('GET', '/v2/auth/providers')).status, 401);
    assert.equal((await anonymous('POST', '/v2/auth/providers', { body: body('anon') })).status, 401);
    const wrong = await anonymous('GET', '/v2/auth/providers', { key: 'berth_wrong' });
    assert.equal(wrong.status, 401);
    assert.equal(typeof wrong.body.detail, 'string');

    const other = await otherTenants(ctx());
    const otherOrg = client(server.url, { key: other.otherOrganizationKey });
    const theirList = await otherOrg('GET', '/v2/auth/providers');
    assert.equal(theirList.status, 200);
    assert.deepEqual(theirList.body, []);
    assert.equal((await otherOrg('GET', '/v2/auth/providers/github')).status, 404);
    assert.equal((await otherOrg('PATCH', '/v2/auth/providers/github', { body: { name: 'stolen' } })).status, 404);
    assert.equal((await otherOrg('DELETE', '/v2/auth/providers/github')).status, 404);
    assert.equal((await ctx().api('GET', '/v2/auth/providers/github')).body.name, 'GH');
    // The same provider_id is free in another organization.
    const theirs = await otherOrg('POST', '/v2/auth/providers', { body: body('github') });
    assert.equal(theirs.status, 200);
    assert.notEqual(theirs.body.organization_id, server.organizationId);

    // A key bound to another workspace of this organization sees the organization's providers;
    // the tenant header plays no part on organization-scoped routes.
    const otherWorkspace = client(server.url, { key: other.otherWorkspaceKey });
    const seen = await otherWorkspace('GET', '/v2/auth/providers');
    assert.equal(seen.status, 200);
    assert.ok(seen.body.some((p: { provider_id: string }) => p.provider_id === 'github'));
    assert.ok(seen.body.every((p: { organization_id: string }) => p.organization_id === server.organizationId));
    assert.equal((await otherWorkspace('GET', '/v2/auth/providers/github', { tenant: server.workspaceId })).status, 200);
  });

  test('the OpenAPI document describes the routes without a client_secret in any answer', async () => {
    const doc = (await ctx().anonymous('GET', '/openapi.json')).body;
    const create = doc.paths['/v2/auth/providers'].post;
    assert.deepEqual(create.tags, ['oauth providers']);
    assert.ok(resolved(doc, create.requestBody.content['application/json'].schema).required.includes('client_secret'));
    const answer = resolved(doc, create.responses['200'].content['application/json'].schema);
    assert.deepEqual(Object.keys(answer.properties).sort(), FIELDS);
    for (const method of ['get', 'patch', 'delete']) assert.ok(doc.paths['/v2/auth/providers/{provider_id}'][method].responses['404']);
  });

  test('no client secret ever reaches the logs', async () => {
    const { server } = ctx();
    assert.ok(secrets.length > 5);
    assert.ok(server.logs.length > 0);
    const logs = server.logs.join('');
    for (const secret of secrets) assert.ok(!logs.includes(secret), 'a client secret was logged');
  });
});
