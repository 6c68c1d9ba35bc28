import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { type Client, client } from '../support/http.js';
import { createPostgresDatabase, startTestServer, type TestServer } from '../support/server.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';
import { deadline } from '../support/deadline.js';

const provider = (providerId: string) => ({
  provider_id: providerId,
  name: 'Provider',
  client_id: 'client',
  client_secret: `secret-${randomUUID()}`,
  auth_url: 'https://auth.example.com/authorize',
  token_url: 'https://auth.example.com/token',
});

const imageDeployment = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets: [],
});

describeOnEachDatabase('authorization and keys', (ctx) => {
  test('OAuth provider writes need an admin key; any key of the organization reads them', async () => {
    const { api, server } = ctx();
    assert.equal((await api('POST', '/v2/auth/providers', { body: provider('guarded') })).status, 200);
    const member = await api('POST', '/v1/api-keys', { body: { name: 'member', workspace_id: server.workspaceId, role: 'member' } });
    const asMember = client(server.url, { key: member.body.key });
    assert.equal((await asMember('GET', '/v2/auth/providers/guarded')).status, 200);
    assert.equal((await asMember('GET', '/v2/auth/providers')).status, 200);
    for (const [method, path, body] of [
      ['POST', '/v2/auth/providers', provider('by-member')],
      ['PATCH', '/v2/auth/providers/guarded', { token_url: 'https://evil.example.com/token' }],
      ['DELETE', '/v2/auth/providers/guarded', undefined],
    ] as const) {
      const res = await asMember(method, path, { body });
      assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      assert.equal(res.body.detail, 'This operation requires an admin API key.');
    }
    const kept = await api('GET', '/v2/auth/providers/guarded');
    assert.equal(kept.body.token_url, 'https://auth.example.com/token');
    assert.equal((await api('GET', '/v2/auth/providers/by-member')).status, 404);
    assert.equal((await api('PATCH', '/v2/auth/providers/guarded', { body: { name: 'Renamed' } })).body.name, 'Renamed');
    assert.equal((await api('DELETE', '/v2/auth/providers/guarded')).status, 200);
  });

  test('an admin key acts in any workspace of its organization with X-Tenant-Id; member keys stay bound', async () => {
    const { api, server } = ctx();
    const created = await api('POST', '/v1/workspaces', { body: { name: `admin-reach-${randomUUID()}` } });
    assert.equal(created.status, 201);
    const inNew = await api('POST', '/v2/deployments', { body: imageDeployment('in-new-workspace'), tenant: created.body.id });
    assert.equal(inNew.status, 201, inNew.text);
    assert.equal(inNew.body.tenant_id, created.body.id);
    const listed = await api('GET', '/v2/deployments', { tenant: created.body.id });
    assert.deepEqual(
      listed.body.resources.map((d: { id: string }) => d.id),
      [inNew.body.id],
    );
    // Without the header the bound workspace is the default.
    const home = await api('GET', `/v2/deployments/${inNew.body.id}`);
    assert.equal(home.status, 404);
    assert.equal((await api('GET', '/v2/deployments', { tenant: server.workspaceId })).status, 200);

    const member = await api('POST', '/v1/api-keys', { body: { workspace_id: server.workspaceId, role: 'member' } });
    const asMember = client(server.url, { key: member.body.key });
    const refused = await asMember('GET', '/v2/deployments', { tenant: created.body.id });
    assert.equal(refused.status, 403);
    assert.equal((await asMember('GET', '/v2/deployments')).status, 200);

    const other = await otherTenants(ctx());
    const otherAdmin = client(server.url, { key: other.otherOrganizationKey });
    assert.equal((await otherAdmin('GET', '/v2/deployments', { tenant: created.body.id })).status, 403);
    assert.equal((await api('GET', '/v2/deployments', { tenant: other.otherOrganizationWorkspaceId })).status, 403);
  });

  test('a revoked key loses its open event stream and its long poll', { timeout: deadline(60_000) }, async () => {
    const { api, server } = ctx();
    const workspace = await api('POST', '/v1/workspaces', { body: { name: `revocation-${randomUUID()}` } });
    const tenant = workspace.body.id as string;
    const created = await api('POST', '/v1/api-keys', { body: { workspace_id: tenant, role: 'member' } });
    const key = created.body.key as string;
    // A revision that never finishes (its listener never comes): the poll would wait its 120 s.
    const listener = await api('POST', '/v2/listeners', {
      tenant,
      body: { compute_type: 'k8s', compute_id: `c-${randomUUID()}`, compute_config: { k8s_namespaces: ['ns'] } },
    });
    const placed = await api('POST', '/v2/deployments', {
      tenant,
      body: { ...imageDeployment(`placed-${randomUUID().slice(0, 8)}`), source_config: { listener_id: listener.body.id } },
    });
    assert.equal(placed.status, 201, placed.text);

    const stream = await fetch(`${server.url}/v2/deployments/${placed.body.id}/events`, { headers: { 'x-api-key': key } });
    assert.equal(stream.status, 200);
    const streamText = stream.text();
    const poll = client(server.url, { key })('GET', `/v2/deployments/${placed.body.id}/revisions/${placed.body.latest_revision_id}?wait_for_terminal=120`);
    await new Promise((resolve) => setTimeout(resolve, 300));

    assert.equal((await api('DELETE', `/v1/api-keys/${created.body.id}`)).status, 204);
    const polled = await poll;
    assert.equal(polled.status, 401, polled.text);
    assert.match(polled.body.detail, /revoked/);
    assert.match(await streamText, /: the API key was revoked/);
    // And the revoked key cannot open a new one.
    const again = await fetch(`${server.url}/v2/deployments/${placed.body.id}/events`, { headers: { 'x-api-key': key } });
    assert.equal(again.status, 401);
    await again.body?.cancel();
  });

  test('key hints show only the last 4 characters, after the public prefix of generated keys', async () => {
    const { api, server } = ctx();
    const created = await api('POST', '/v1/api-keys', { body: { name: 'hinted' } });
    const key = created.body.key as string;
    assert.equal(created.body.key_hint, `berth_…${key.slice(-4)}`);
    const listed = await api('GET', '/v1/api-keys');
    const hints = new Map(listed.body.map((k: { id: string; key_hint: string }) => [k.id, k.key_hint]));
    assert.equal(hints.get(created.body.id), `berth_…${key.slice(-4)}`);
    // The configured bootstrap key (berth_test_<uuid>) shows no more of itself.
    assert.ok([...hints.values()].includes(`berth_…${server.adminKey.slice(-4)}`));
    for (const hint of hints.values()) assert.ok((hint as string).length <= 11, `hint ${hint}`);
  });
});

describe('the failed-authentication budget', () => {
  let direct: TestServer;
  let proxied: TestServer;
  before(async () => {
    const limits = { rateLimitPerMinute: 5 };
    direct = await startTestServer('sqlite', { engine: false, limits });
    proxied = await startTestServer('sqlite', { engine: false, limits: { ...limits, trustedProxies: ['127.0.0.1'] } });
  });
  after(async () => {
    await direct?.close();
    await proxied?.close();
  });

  const guess = (server: TestServer, headers: Record<string, string> = {}) =>
    client(server.url)('GET', '/v2/listeners', { key: `berth_guess_${randomUUID()}`, headers });
  /** A wrong key of the shape Berth generates (`berth_` and 43 base64url characters). */
  const generatedShapeGuess = (server: TestServer) => client(server.url)('GET', '/v2/listeners', { key: `berth_${randomBytes(32).toString('base64url')}` });
  /** Counts the keys the server looks up, from now on. */
  const countLookups = (server: TestServer) => {
    const tenancy = server.berth.services.tenancy;
    const lookup = tenancy.authenticate;
    const counted = { lookups: 0 };
    tenancy.authenticate = (key) => {
      counted.lookups += 1;
      return lookup(key);
    };
    return counted;
  };

  test('past the budget wrong keys get 429 and guessable ones are not looked up, while valid keys, even never used here, still work', async () => {
    const api: Client = client(direct.url, { key: direct.adminKey });
    // A member of another workspace, behind the same address (one NAT), guesses keys.
    const workspace = await api('POST', '/v1/workspaces', { body: { name: `guessers-${randomUUID()}` } });
    const hostileKey = (await api('POST', '/v1/api-keys', { body: { name: 'hostile', workspace_id: workspace.body.id } })).body.key as string;
    const victimKey = (await api('POST', '/v1/api-keys', { body: { name: 'victim', workspace_id: direct.workspaceId } })).body.key as string;
    const hostile = client(direct.url, { key: hostileKey });
    assert.equal((await hostile('GET', '/v2/listeners')).status, 200);

    const statuses: number[] = [];
    for (let i = 0; i < 7; i += 1) statuses.push((await guess(direct)).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    const counted = countLookups(direct);
    assert.equal((await guess(direct)).status, 429);
    assert.equal((await client(direct.url)('GET', '/v2/listeners')).status, 429, 'no key at all counts as a failure too');
    assert.equal(counted.lookups, 0, 'a key that could be guessed is refused before it is looked up');
    const refused = await generatedShapeGuess(direct);
    assert.equal(refused.status, 429, 'a wrong key of the generated shape is looked up and answered 429, not 401');
    assert.equal(refused.body.code, 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);

    // Keys that are valid are not throttled: one never used from this address, and the guesser's own.
    const victim = await client(direct.url, { key: victimKey })('GET', '/v2/listeners');
    assert.equal(victim.status, 200, victim.text);
    assert.equal((await api('GET', '/v2/listeners')).status, 200);
    assert.equal((await hostile('GET', '/v2/listeners')).status, 200);
    // The guesser's valid key takes nothing off the count: wrong keys stay throttled.
    assert.equal((await guess(direct)).status, 429);
    assert.equal((await generatedShapeGuess(direct)).status, 429);
  });

  test('after a restart, a valid key authenticates from an address over its budget; a guessable one waits', async () => {
    const database = await createPostgresDatabase();
    const bootstrapApiKey = `berth_test_${randomUUID()}`;
    const options = { engine: false, limits: { rateLimitPerMinute: 5 }, postgresUrl: database.url, bootstrapApiKey };
    let first: TestServer | undefined;
    let restarted: TestServer | undefined;
    try {
      first = await startTestServer('postgres', options);
      const key = (
        await client(first.url, { key: bootstrapApiKey })('POST', '/v1/api-keys', { body: { name: 'used-before', workspace_id: first.workspaceId } })
      ).body.key as string;
      assert.equal((await client(first.url, { key })('GET', '/v2/listeners')).status, 200);
      await first.close();
      first = undefined;

      restarted = await startTestServer('postgres', options);
      for (let i = 0; i < 5; i += 1) assert.equal((await guess(restarted)).status, 401);
      assert.equal((await guess(restarted)).status, 429);
      assert.equal((await client(restarted.url, { key })('GET', '/v2/listeners')).status, 200, 'the key used before the restart');
      // The configured bootstrap key (berth_test_<uuid>) could be a weak one: past the budget it is not looked up
      // until it has authenticated on this server.
      assert.equal((await client(restarted.url, { key: bootstrapApiKey })('GET', '/v2/listeners')).status, 429);
    } finally {
      await first?.close();
      await restarted?.close();
      await database.drop();
    }
  });

  test('behind a trusted proxy, clients are told apart by X-Forwarded-For; elsewhere the header is ignored', async () => {
    for (let i = 0; i < 5; i += 1) assert.equal((await guess(proxied, { 'x-forwarded-for': '203.0.113.1' })).status, 401);
    assert.equal((await guess(proxied, { 'x-forwarded-for': '203.0.113.1' })).status, 429);
    assert.equal((await guess(proxied, { 'x-forwarded-for': '203.0.113.2' })).status, 401, 'another client behind the proxy has its own budget');

    // Without trusted proxies, a client cannot escape its budget by naming another address.
    for (let i = 0; i < 5; i += 1) await guess(direct, { 'x-forwarded-for': `198.51.100.${i}` });
    assert.equal((await guess(direct, { 'x-forwarded-for': '198.51.100.99' })).status, 429);
  });
});

describe('configuration of keys and proxies', () => {
  test('a configured bootstrap key has at least 32 characters', () => {
    assert.throws(
      () => loadConfig({ BERTH_BOOTSTRAP_API_KEY: 'k'.repeat(31) }),
      (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /BERTH_BOOTSTRAP_API_KEY must be at least 32 characters long/);
        assert.doesNotMatch(error.message, /kkkk/);
        return true;
      },
    );
    assert.equal(loadConfig({ BERTH_BOOTSTRAP_API_KEY: 'k'.repeat(32) }).bootstrapApiKey, 'k'.repeat(32));
  });

  test('BERTH_TRUSTED_PROXIES takes addresses, CIDR ranges and range names', () => {
    assert.deepEqual(loadConfig({}).limits.trustedProxies, []);
    assert.deepEqual(loadConfig({ BERTH_TRUSTED_PROXIES: '10.0.0.0/8, ::1,loopback, 192.0.2.7' }).limits.trustedProxies, [
      '10.0.0.0/8',
      '::1',
      'loopback',
      '192.0.2.7',
    ]);
    for (const wrong of ['proxy.example.com', '10.0.0.0/33', '10.0.0.1/8/2', '*']) {
      assert.throws(() => loadConfig({ BERTH_TRUSTED_PROXIES: wrong }), /BERTH_TRUSTED_PROXIES must list/, wrong);
    }
  });

  test('BERTH_RESPONSE_WRITE_TIMEOUT_MS is read and checked', () => {
    assert.equal(loadConfig({}).limits.responseWriteTimeoutMs, 30_000);
    assert.equal(loadConfig({ BERTH_RESPONSE_WRITE_TIMEOUT_MS: '5000' }).limits.responseWriteTimeoutMs, 5000);
    assert.throws(() => loadConfig({ BERTH_RESPONSE_WRITE_TIMEOUT_MS: '10' }), /BERTH_RESPONSE_WRITE_TIMEOUT_MS must be an integer of at least 1000/);
  });
});
