import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { hashApiKey } from '../../src/security/api-keys.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';

const imageDeployment = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets: [],
});

interface SignedIn {
  cookie: string;
  secret: string;
  setCookie: string;
  session: any;
  /** A request with the session cookie (and no key), the CSRF token only when `csrf` is given. */
  call(
    method: string,
    path: string,
    options?: { body?: unknown; csrf?: string; tenant?: string },
  ): Promise<{ status: number; body: any; text: string; headers: Headers }>;
}

/** Signs in with `key` as a browser would, keeping the cookie. */
async function signIn(baseUrl: string, key: string, headers: Record<string, string> = {}): Promise<SignedIn> {
  const res = await fetch(`${baseUrl}/v1/sessions`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', ...headers },
    body: '{}',
  });
  assert.equal(res.status, 201, await res.clone().text());
  const setCookie = res.headers.getSetCookie().find((line) => line.startsWith('berth_session='));
  assert.ok(setCookie, 'the answer sets the session cookie');
  const cookie = setCookie.split(';')[0]!;
  const secret = cookie.slice('berth_session='.length);
  const session = await res.json();
  return {
    cookie,
    secret,
    setCookie,
    session,
    async call(method, path, options = {}) {
      const sent: Record<string, string> = { cookie };
      if (options.body !== undefined) sent['content-type'] = 'application/json';
      if (options.csrf !== undefined) sent['x-csrf-token'] = options.csrf;
      if (options.tenant) sent['x-tenant-id'] = options.tenant;
      const answer = await fetch(`${baseUrl}${path}`, { method, headers: sent, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
      const text = await answer.text();
      return { status: answer.status, body: text ? JSON.parse(text) : null, text, headers: answer.headers };
    },
  };
}

describeOnEachDatabase('dashboard sessions', (ctx) => {
  test('sign-in sets an HttpOnly, SameSite=Strict cookie for every path (not Secure over http) and stores only its digest', async () => {
    const { server } = ctx();
    const signedIn = await signIn(server.url, server.adminKey);
    const attributes = signedIn.setCookie.split(';').map((part) => part.trim().toLowerCase());
    assert.ok(attributes.includes('httponly'), signedIn.setCookie);
    assert.ok(attributes.includes('samesite=strict'), signedIn.setCookie);
    assert.ok(attributes.includes('path=/'), signedIn.setCookie);
    assert.ok(!attributes.includes('secure'), 'no Secure flag on a plain http request');
    assert.ok(attributes.some((part) => part.startsWith('expires=')));
    assert.ok(signedIn.secret.length >= 43);
    assert.ok(!signedIn.setCookie.includes(server.adminKey), 'the key is not in the cookie');

    const { session } = signedIn;
    assert.equal(session.key.role, 'admin');
    assert.equal(session.workspace_id, server.workspaceId);
    assert.equal(session.can_switch_workspace, true);
    assert.ok(session.allowed.includes('DELETE /v2/deployments/{deployment_id}'));
    const hours = (Date.parse(session.expires_at) - Date.parse(session.created_at)) / 3_600_000;
    assert.equal(hours, 12, 'BERTH_SESSION_HOURS defaults to 12');

    const rows = await server.berth.db.selectFrom('sessions').selectAll().where('id', '=', session.id).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.secret_hash, hashApiKey(signedIn.secret));
    assert.ok(!JSON.stringify(rows).includes(signedIn.secret), 'the secret itself is not stored');
    const audit = await server.berth.db.selectFrom('audit_log').select(['action', 'workspace_id']).where('target_id', '=', session.id).execute();
    assert.deepEqual(audit, [{ action: 'session.create', workspace_id: server.workspaceId }], "recorded in the key's workspace");

    const current = await signedIn.call('GET', '/v1/sessions/current');
    assert.equal(current.status, 200, current.text);
    assert.equal(current.body.csrf_token, session.csrf_token);
    assert.equal((await signedIn.call('GET', '/v2/deployments')).status, 200);
    // With a key instead of a cookie there is no current session.
    const withKey = await ctx().api('GET', '/v1/sessions/current');
    assert.deepEqual([withKey.status, withKey.body.code], [404, 'session_not_found']);
  });

  test('a write made with the cookie needs the CSRF token; reads do not', async () => {
    const { server } = ctx();
    const signedIn = await signIn(server.url, server.adminKey);
    const body = imageDeployment(`csrf-${randomUUID().slice(0, 8)}`);
    const missing = await signedIn.call('POST', '/v2/deployments', { body });
    assert.deepEqual([missing.status, missing.body.code], [403, 'csrf_token_invalid']);
    const wrong = await signedIn.call('POST', '/v2/deployments', { body, csrf: `${signedIn.session.csrf_token}x` });
    assert.deepEqual([wrong.status, wrong.body.code], [403, 'csrf_token_invalid']);
    const other = await signIn(server.url, server.adminKey);
    const foreign = await signedIn.call('POST', '/v2/deployments', { body, csrf: other.session.csrf_token });
    assert.deepEqual([foreign.status, foreign.body.code], [403, 'csrf_token_invalid'], "another session's token is not this one's");
    const listed = await ctx().api('GET', `/v2/deployments?name_contains=${body.name}`);
    assert.equal(listed.body.resources.length, 0, 'nothing was created without the token');

    const created = await signedIn.call('POST', '/v2/deployments', { body, csrf: signedIn.session.csrf_token });
    assert.equal(created.status, 201, created.text);
    const audit = await server.berth.db.selectFrom('audit_log').select(['actor_key_id', 'action']).where('target_id', '=', created.body.id).execute();
    assert.deepEqual(audit, [{ actor_key_id: signedIn.session.key.id, action: 'deployment.create' }], 'the change is the key’s, in the audit log');
  });

  test('an expired session, a revoked key and a forged cookie get 401', async () => {
    const { server, api } = ctx();
    const expiring = await signIn(server.url, server.adminKey);
    await server.berth.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', expiring.session.id)
      .execute();
    const expired = await expiring.call('GET', '/v2/deployments');
    assert.deepEqual([expired.status, expired.body.code], [401, 'session_invalid']);

    const member = await api('POST', '/v1/api-keys', { body: { name: `member-${randomUUID()}`, workspace_id: server.workspaceId } });
    const asMember = await signIn(server.url, member.body.key);
    assert.equal((await asMember.call('GET', '/v2/deployments')).status, 200);
    assert.equal((await api('DELETE', `/v1/api-keys/${member.body.id}`)).status, 204);
    const revoked = await asMember.call('GET', '/v2/deployments');
    assert.deepEqual([revoked.status, revoked.body.code], [401, 'session_invalid'], 'revoking the key ends its sessions');

    const forged = await fetch(`${server.url}/v2/deployments`, { headers: { cookie: `berth_session=${expiring.secret.slice(0, -2)}xx` } });
    assert.equal(forged.status, 401);
  });

  test('sign-out needs the CSRF token, ends the session and clears the cookie', async () => {
    const { server } = ctx();
    const signedIn = await signIn(server.url, server.adminKey);
    assert.equal((await signedIn.call('DELETE', '/v1/sessions/current')).status, 403, 'another site cannot sign a person out');
    const out = await signedIn.call('DELETE', '/v1/sessions/current', { csrf: signedIn.session.csrf_token });
    assert.equal(out.status, 204, out.text);
    const cleared = out.headers.getSetCookie().find((line) => line.startsWith('berth_session='));
    assert.ok(cleared && /expires=thu, 01 jan 1970/i.test(cleared), `cleared: ${cleared}`);
    const after = await signedIn.call('GET', '/v1/sessions/current');
    assert.deepEqual([after.status, after.body.code], [401, 'session_invalid']);
    const audit = await server.berth.db.selectFrom('audit_log').select(['action']).where('target_id', '=', signedIn.session.id).orderBy('created_at').execute();
    assert.deepEqual(
      audit.map((row) => row.action),
      ['session.create', 'session.revoke'],
    );
  });

  test("what a session may do follows its key's role; a listener key cannot sign in", async () => {
    const { server, api } = ctx();
    const readOnly = await api('POST', '/v1/api-keys', { body: { name: 'ro', workspace_id: server.workspaceId, role: 'read_only' } });
    const signedIn = await signIn(server.url, readOnly.body.key);
    assert.equal(signedIn.session.key.role, 'read_only');
    assert.equal(signedIn.session.can_switch_workspace, false);
    assert.ok(signedIn.session.allowed.includes('GET /v2/deployments'));
    assert.ok(
      !signedIn.session.allowed.some((route: string) => route.startsWith('POST /v2/') || route.startsWith('DELETE /v2/')),
      signedIn.session.allowed.join(),
    );
    const refused = await signedIn.call('POST', '/v2/deployments', { body: imageDeployment('ro-write'), csrf: signedIn.session.csrf_token });
    assert.deepEqual([refused.status, refused.body.code], [403, 'role_forbids']);

    const listener = await api('POST', '/v2/listeners', {
      body: { compute_type: 'k8s', compute_id: `session-${randomUUID()}`, compute_config: { k8s_namespaces: ['ns'] } },
    });
    assert.equal(listener.status, 201, listener.text);
    const asListener = await fetch(`${server.url}/v1/sessions`, {
      method: 'POST',
      headers: { 'x-api-key': listener.body.listener_key, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(asListener.status, 403);
    assert.equal(asListener.headers.getSetCookie().length, 0);
    // A workspace with a listener needs it named by every new deployment; the next tests make deployments.
    assert.equal((await api('DELETE', `/v2/listeners/${listener.body.id}`)).status, 204);
  });

  test("a hostile member's session of another workspace cannot read or change this workspace's deployments", async () => {
    const { server, api } = ctx();
    const mine = await api('POST', '/v2/deployments', { body: imageDeployment(`mine-${randomUUID().slice(0, 8)}`) });
    assert.equal(mine.status, 201, mine.text);
    const { otherWorkspaceKey, otherOrganizationKey } = await otherTenants(ctx());
    for (const key of [otherWorkspaceKey, otherOrganizationKey]) {
      const hostile = await signIn(server.url, key);
      const csrf = hostile.session.csrf_token;
      const listed = await hostile.call('GET', '/v2/deployments');
      assert.equal(listed.status, 200);
      assert.ok(!listed.body.resources.some((d: { id: string }) => d.id === mine.body.id));
      assert.equal((await hostile.call('GET', `/v2/deployments/${mine.body.id}`)).status, 404);
      assert.equal((await hostile.call('DELETE', `/v2/deployments/${mine.body.id}`, { csrf })).status, 404);
      const named = await hostile.call('GET', '/v2/deployments', { tenant: server.workspaceId });
      assert.equal(named.status, 403, 'naming this workspace does not reach it');
    }
    assert.equal((await api('GET', `/v2/deployments/${mine.body.id}`)).status, 200, 'the deployment is untouched');
  });
});

describe('dashboard sessions behind an https proxy', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { engine: false, limits: { trustedProxies: ['127.0.0.1'] }, env: { BERTH_SESSION_HOURS: '2' } });
  });
  after(async () => server?.close());

  test('the cookie is Secure when the request came over https, and lasts BERTH_SESSION_HOURS', async () => {
    const signedIn = await signIn(server.url, server.adminKey, { 'x-forwarded-proto': 'https' });
    assert.ok(
      signedIn.setCookie.split(';').some((part) => part.trim().toLowerCase() === 'secure'),
      signedIn.setCookie,
    );
    const hours = (Date.parse(signedIn.session.expires_at) - Date.parse(signedIn.session.created_at)) / 3_600_000;
    assert.equal(hours, 2);
  });
});
