import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { describeOnEachDatabase } from '../support/suite.js';

const VALUE = `sv-${randomUUID()}`;

const imageDeployment = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: null,
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets: [{ name: 'API_TOKEN', value: VALUE }],
});

/** Signs in with `key` as the dashboard does; `call` sends the cookie (and the CSRF token on writes), never a key. */
async function signIn(baseUrl: string, key: string) {
  const res = await fetch(`${baseUrl}/v1/sessions`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 201, await res.clone().text());
  const cookie = res.headers
    .getSetCookie()
    .find((line) => line.startsWith('berth_session='))!
    .split(';')[0]!;
  const { csrf_token: csrf } = (await res.json()) as { csrf_token: string };
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const sent: Record<string, string> = { cookie, 'x-csrf-token': csrf, ...headers };
    if (body !== undefined) sent['content-type'] = 'application/json';
    const answer = await fetch(`${baseUrl}${path}`, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: answer.status, text: await answer.text(), headers: answer.headers };
  };
}

describeOnEachDatabase('secret values and dashboard sessions', (ctx) => {
  test('no answer to a session carries a secret value; names stay and value is null', async () => {
    const { server } = ctx();
    const session = await signIn(server.url, server.adminKey);
    const created = await session('POST', '/v2/deployments', imageDeployment(`sess-${randomUUID().slice(0, 8)}`), { 'idempotency-key': randomUUID() });
    assert.equal(created.status, 201, created.text);
    assert.ok(!created.text.includes(VALUE), 'the create answer has no value');
    const id = JSON.parse(created.text).id as string;
    assert.deepEqual(JSON.parse(created.text).secrets, [{ name: 'API_TOKEN', value: null }]);

    const bodies = [
      await session('GET', `/v2/deployments/${id}`),
      await session('GET', `/v2/deployments?deployment_ids=${id}`),
      await session('PATCH', `/v2/deployments/${id}`, { display_name: 'renamed' }),
      await session('POST', `/v2/deployments/${id}/unpin`, {}),
    ];
    for (const answer of bodies) {
      assert.equal(answer.status, 200, answer.text);
      assert.ok(answer.text.includes('API_TOKEN'), 'the name is answered');
      assert.ok(!answer.text.includes(VALUE), `no value in ${answer.text.slice(0, 200)}`);
    }
  });

  test('a replay to a session of an answer kept for the same key carries no value either', async () => {
    const { server } = ctx();
    const idempotencyKey = randomUUID();
    const body = imageDeployment(`replay-${randomUUID().slice(0, 8)}`);
    const first = await fetch(`${server.url}/v2/deployments`, {
      method: 'POST',
      headers: { 'x-api-key': server.adminKey, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify(body),
    });
    assert.equal(first.status, 201);
    assert.ok((await first.text()).includes(VALUE), 'the key is answered the value');
    const session = await signIn(server.url, server.adminKey);
    const replay = await session('POST', '/v2/deployments', body, { 'idempotency-key': idempotencyKey });
    if (replay.headers.get('idempotent-replayed') === 'true') assert.ok(!replay.text.includes(VALUE), replay.text);
    else assert.notEqual(replay.status, 201, 'a session never creates the deployment twice');
    assert.ok(!replay.text.includes(VALUE), replay.text);
  });

  test('API keys are answered the values as before', async () => {
    const { server } = ctx();
    const created = await fetch(`${server.url}/v2/deployments`, {
      method: 'POST',
      headers: { 'x-api-key': server.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify(imageDeployment(`key-${randomUUID().slice(0, 8)}`)),
    });
    assert.equal(created.status, 201);
    const body = (await created.json()) as { id: string; secrets: unknown };
    assert.deepEqual(body.secrets, [{ name: 'API_TOKEN', value: VALUE }]);
    const read = await fetch(`${server.url}/v2/deployments/${body.id}`, { headers: { 'x-api-key': server.adminKey } });
    assert.ok((await read.text()).includes(VALUE));
  });
});
