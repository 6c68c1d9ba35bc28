import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { BerthApiError, createBerthClient } from '../../src/client/index.js';
import { startTestServer, type TestServer } from '../support/server.js';

const body = (name: string) => ({
  name,
  source: 'external_docker' as const,
  source_config: {},
  source_revision_config: { image_uri: 'registry.example/agent:1' },
  secrets: [],
});

describe('the typed client makes retries safe', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { engine: false });
  });
  after(async () => server?.close());

  test('a create whose answer was lost is sent again with its Idempotency-Key and creates one deployment', async () => {
    const keys: (string | null)[] = [];
    let lost = false;
    // Berth does the work, then the connection "drops" before the answer arrives.
    const losingFetch: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      const answer = await fetch(request.clone());
      if (request.method === 'POST') {
        keys.push(request.headers.get('idempotency-key'));
        if (!lost) {
          lost = true;
          throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
        }
      }
      return answer;
    };
    const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey, fetch: losingFetch });
    const name = `retried-${randomUUID().slice(0, 8)}`;
    const created = await berth.deployments.create(body(name));
    assert.equal(created.name, name);
    assert.equal(keys.length, 2);
    assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(keys[1], keys[0], 'the retry carries the same key');
    const listed = await berth.deployments.list({ name });
    assert.equal(listed.resources.length, 1);
  });

  test('a create the client gave up on mid-request, sent again with its key, has one effect', async () => {
    const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey });
    const key = randomUUID();
    const name = `abandoned-${randomUUID().slice(0, 8)}`;
    const abandoned = new AbortController();
    const first = fetch(`${server.url}/v2/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.adminKey, 'idempotency-key': key },
      body: JSON.stringify(body(name)),
      signal: abandoned.signal,
    }).catch((error: Error) => error);
    // Given up once Berth has taken the key: the request is Berth's to finish.
    const deadline = Date.now() + 30_000;
    while (!(await server.berth.db.selectFrom('idempotency_keys').select('id').where('key', '=', key).executeTakeFirst())) {
      assert.ok(Date.now() < deadline, 'Berth never took the key');
      await new Promise((resolve) => setImmediate(resolve));
    }
    abandoned.abort();
    const outcome = await first;
    assert.ok(outcome instanceof Error ? outcome.name === 'AbortError' : outcome.status === 201);
    // The retry replays the first request's answer, waits for it (409 in progress, Retry-After), or is the first to arrive.
    const created = await berth.deployments.create(body(name), { idempotencyKey: key });
    assert.equal(created.name, name);
    const again = await berth.deployments.create(body(name), { idempotencyKey: key });
    assert.equal(again.id, created.id);
    assert.equal((await berth.deployments.list({ name })).resources.length, 1);
  });

  test('a key of its own is sent as given; separate creates get separate keys', async () => {
    const seen: (string | null)[] = [];
    const watching: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      if (request.method === 'POST') seen.push(request.headers.get('idempotency-key'));
      return fetch(request);
    };
    const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey, fetch: watching });
    const mine = randomUUID();
    const first = await berth.deployments.create(body(`own-${randomUUID().slice(0, 8)}`), { idempotencyKey: mine });
    const again = await berth.deployments.create(body(first.name), { idempotencyKey: mine });
    assert.equal(again.id, first.id);
    await berth.deployments.create(body(`other-${randomUUID().slice(0, 8)}`));
    await berth.deployments.create(body(`other-${randomUUID().slice(0, 8)}`));
    assert.equal(seen[0], mine);
    assert.equal(seen[1], mine);
    assert.notEqual(seen[2], seen[3]);
  });

  test('modify writes with If-Match and, when the deployment changed in between, reads again and reapplies', async () => {
    const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey });
    const created = await berth.deployments.create(body(`rmw-${randomUUID().slice(0, 8)}`));
    let interfered = false;
    const reads: string[] = [];
    const modified = await berth.deployments.modify(created.id, (current) => {
      reads.push(current.display_name ?? '');
      return { display_name: `${current.display_name ?? ''}+mine` };
    });
    assert.equal(modified.after?.display_name, '+mine');

    // Another writer changes it after each first read: the client's first write is refused.
    const sneaky: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      if (request.method === 'PATCH' && !interfered) {
        interfered = true;
        await berth.deployments.update(created.id, { display_name: 'theirs' });
      }
      return fetch(request);
    };
    const racing = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey, fetch: sneaky });
    const result = await racing.deployments.modify(created.id, (current) => {
      reads.push(current.display_name ?? '');
      return { display_name: `${current.display_name ?? ''}+mine` };
    });
    assert.equal(interfered, true);
    assert.deepEqual(reads, ['', '+mine', 'theirs']);
    assert.equal(result.after?.display_name, 'theirs+mine', 'their change is kept, not overwritten');
    assert.equal((await berth.deployments.get(created.id)).display_name, 'theirs+mine');
  });

  test('a read Berth answers 503 is asked again after its Retry-After, up to four times; a write is not', async () => {
    const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey });
    const created = await berth.deployments.create(body(`unavailable-${randomUUID().slice(0, 8)}`));
    let unavailable = 0;
    const sent: string[] = [];
    // Berth's answer while its database is away (src/http/errors.ts), for as many sends as the test says.
    const flaky: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      sent.push(request.method);
      if (unavailable > 0) {
        unavailable -= 1;
        return Response.json(
          { detail: 'The database is unavailable; try again shortly.', code: 'database_unavailable' },
          { status: 503, headers: { 'retry-after': '0' } },
        );
      }
      return fetch(request);
    };
    const patient = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey, fetch: flaky });

    unavailable = 2;
    assert.equal((await patient.deployments.get(created.id)).id, created.id);
    assert.deepEqual(sent.splice(0), ['GET', 'GET', 'GET']);

    unavailable = 10;
    await assert.rejects(
      patient.deployments.get(created.id),
      (error: unknown) => error instanceof BerthApiError && error.status === 503 && error.code === 'database_unavailable',
    );
    assert.deepEqual(sent.splice(0), ['GET', 'GET', 'GET', 'GET'], 'four sends, then the answer is the caller’s');

    unavailable = 1;
    await assert.rejects(
      patient.deployments.update(created.id, { display_name: 'once' }),
      (error: unknown) => error instanceof BerthApiError && error.status === 503,
    );
    assert.deepEqual(sent.splice(0), ['PATCH'], 'a write is sent once');
    assert.equal((await berth.deployments.get(created.id)).display_name ?? null, null, 'and did nothing');
  });

  test("a read waiting out a 503's Retry-After ends as soon as its caller aborts, without another send", async () => {
    const berth = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey });
    const created = await berth.deployments.create(body(`abort-wait-${randomUUID().slice(0, 8)}`));
    const stop = new AbortController();
    let sends = 0;
    // Berth away for a while: every answer asks for 10 s; the caller gives up after the first.
    const away: typeof fetch = async () => {
      sends += 1;
      setImmediate(() => stop.abort());
      return Response.json(
        { detail: 'The database is unavailable; try again shortly.', code: 'database_unavailable' },
        { status: 503, headers: { 'retry-after': '10' } },
      );
    };
    const patient = createBerthClient({ baseUrl: server.url, apiKey: server.adminKey, fetch: away });
    await assert.rejects(
      patient.revisions.get(created.id, created.latest_revision_id as string, {}, stop.signal),
      (error: unknown) => (error as Error).name === 'AbortError',
    );
    assert.equal(sends, 1, 'sent again after the caller had aborted');
  });
});
