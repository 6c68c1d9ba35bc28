import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BerthApiError, createBerthClient } from '../../src/client/index.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** A fetch that keeps cookies as a browser does for one site (Node's fetch keeps none). */
function cookieJarFetch(): typeof fetch {
  let cookie: string | undefined;
  return async (input, init) => {
    const request = new Request(input, init);
    if (cookie) request.headers.set('cookie', cookie);
    const response = await fetch(request);
    const set = response.headers.getSetCookie().find((line) => line.startsWith('berth_session='));
    if (set) cookie = set.split(';')[0];
    return response;
  };
}

describe('the typed client with a session, as the dashboard uses it', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { engine: false });
  });
  after(async () => server?.close());

  test('signs in with a key, then works with the cookie and the CSRF token alone, and signs out', async () => {
    const jar = cookieJarFetch();
    const session = await createBerthClient({ baseUrl: server.url, apiKey: server.adminKey, fetch: jar }).sessions.create();
    assert.equal(session.key.role, 'admin');

    const withoutToken = createBerthClient({ baseUrl: server.url, fetch: jar });
    assert.equal((await withoutToken.sessions.current()).id, session.id, 'reads need only the cookie');
    const refused = await withoutToken.deployments
      .create({ name: 'by-session', source: 'external_docker', source_config: null, source_revision_config: { image_uri: 'localhost/agent:v1' }, secrets: [] })
      .catch((error: unknown) => error);
    assert.ok(refused instanceof BerthApiError && refused.code === 'csrf_token_invalid', String(refused));
    assert.ok(refused.requestId, 'the error carries the request id');

    const client = createBerthClient({ baseUrl: server.url, fetch: jar, csrfToken: session.csrf_token });
    const created = await client.deployments.create({
      name: 'by-session',
      source: 'external_docker',
      source_config: null,
      source_revision_config: { image_uri: 'localhost/agent:v1' },
      secrets: [],
    });
    assert.equal(created.name, 'by-session');
    await client.sessions.delete();
    const ended = await client.deployments.list().catch((error: unknown) => error);
    // Sign-out cleared the cookie, so nothing authenticates the request any more.
    assert.ok(ended instanceof BerthApiError && ended.status === 401, String(ended));
  });
});
