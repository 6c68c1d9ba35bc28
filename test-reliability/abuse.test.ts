/**
 * Abuse: per-key rate limiting (429 with Retry-After), the body size limit (413) and the
 * request timeout (408), beyond what test/http/limits.test.ts covers: the limits under the
 * /api-host prefix, the API's error form on every rejection, bearer clients limited per
 * key, no way around a key's budget, the settings read from the environment by a real
 * process, and the server staying responsive to others while a client stalls.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ApiResponse, client } from '../test/support/http.js';
import { spawnBerth, stopBerth } from '../test/support/process.js';
import { startTestServer, type TestServer } from '../test/support/server.js';
import { assertErrorForm, errorFormProblem, sleep } from './support.js';
import { deadline } from '../test/support/deadline.js';

const RATE = 5;
const BODY_LIMIT = 4096;
const TIMEOUT_MS = 1000;

/** A fresh organization's admin key: its own rate-limit budget. */
async function freshKey(server: TestServer): Promise<string> {
  const org = await server.berth.services.tenancy.createOrganization(`abuse-${randomUUID()}`);
  assert.ok(org);
  return org.apiKey;
}

async function get(server: TestServer, urlPath: string, headers: Record<string, string>): Promise<ApiResponse> {
  return client(server.url)('GET', urlPath, { key: null, headers });
}

function assertLimited(res: ApiResponse, what: string): void {
  assert.equal(res.status, 429, `${what}: expected 429, got ${res.status}: ${res.text.slice(0, 200)}`);
  assertErrorForm(res, what);
  assert.match(res.body.detail, /Rate limit exceeded/);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 60, `${what}: Retry-After is '${res.headers.get('retry-after')}'`);
}

/** Writes raw bytes on a socket and returns everything the server answers until it closes. */
function rawExchange(url: string, write: (socket: net.Socket) => Promise<void> | void, baseTimeoutMs = 15_000): Promise<{ answer: string; elapsedMs: number }> {
  const { port } = new URL(url);
  const timeoutMs = deadline(baseTimeoutMs);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      void Promise.resolve(write(socket)).catch(() => {});
    });
    socket.on('data', (chunk) => {
      data += chunk.toString();
    });
    socket.on('close', () => resolve({ answer: data, elapsedMs: Date.now() - started }));
    socket.on('error', (error) =>
      (error as NodeJS.ErrnoException).code === 'ECONNRESET' || (error as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(error),
    );
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${timeoutMs} ms; got: ${data.slice(0, 200)}`));
    }, timeoutMs);
    socket.on('close', () => clearTimeout(timer));
  });
}

function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
}

/** The body of a raw HTTP answer, with its content type, to check the error form. */
function parseRaw(answer: string): { status: number; contentType: string | null; body: string } {
  const [head = '', ...rest] = answer.split('\r\n\r\n');
  const contentType = /\r\ncontent-type:\s*([^\r\n]+)/i.exec(head)?.[1] ?? null;
  return { status: statusOf(answer), contentType, body: rest.join('\r\n\r\n') };
}

describe('abuse limits, beyond test/http/limits.test.ts', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { engine: false, limits: { rateLimitPerMinute: RATE, bodyLimitBytes: BODY_LIMIT, requestTimeoutMs: TIMEOUT_MS } });
  });
  after(async () => server?.close());

  describe('rate limiting', () => {
    test('one budget per key across the root and /api-host; the 429 there is in the API error form', async () => {
      const key = await freshKey(server);
      const statuses: number[] = [];
      for (const p of ['/v2/deployments', '/api-host/v2/deployments', '/v2/listeners', '/api-host/v1/workspaces', '/v2/deployments']) {
        statuses.push((await get(server, p, { 'x-api-key': key })).status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
      assertLimited(await get(server, '/api-host/v2/deployments', { 'x-api-key': key }), '6th request, under /api-host');
      assertLimited(await get(server, '/v2/deployments', { 'x-api-key': key }), '7th request, at the root');
    });

    test('a limited client gets 429 in the API error form whatever it sends: writes, malformed and invalid requests', async () => {
      const key = await freshKey(server);
      for (let i = 0; i < RATE; i += 1) await get(server, '/v2/deployments', { 'x-api-key': key });
      const api = client(server.url, { key });
      assertLimited(
        await api('POST', '/v2/deployments', {
          body: { name: 'limited', source: 'external_docker', source_config: null, source_revision_config: { image_uri: 'x:1' }, secrets: [] },
        }),
        'valid create',
      );
      assertLimited(await api('POST', '/v2/deployments', { rawBody: '{"name": ' }), 'malformed JSON');
      assertLimited(await api('PATCH', `/v2/deployments/${randomUUID()}`, { body: { secrets: 'nope' } }), 'invalid PATCH');
      assertLimited(await api('GET', '/v2/deployments/not-a-uuid'), 'invalid path id');
      assertLimited(await api('DELETE', `/api-host/v2/deployments/${randomUUID()}`), 'delete under /api-host');
      // Nothing was created by the rejected create.
      const rows = await server.berth.db.selectFrom('deployments').select('id').where('name', '=', 'limited').execute();
      assert.equal(rows.length, 0);
    });

    test('bearer clients are limited per key: their own budget, shared with the same key sent as X-Api-Key', async () => {
      const [first, second] = [await freshKey(server), await freshKey(server)];
      for (let i = 0; i < RATE; i += 1) {
        assert.equal((await get(server, '/v2/deployments', { authorization: `Bearer ${first}` })).status, 200);
      }
      assertLimited(await get(server, '/v2/deployments', { authorization: `Bearer ${first}` }), 'bearer over its budget');
      assertLimited(await get(server, '/v2/deployments', { authorization: `bearer   ${first}` }), 'same key, other spelling of the scheme');
      assertLimited(await get(server, '/v2/deployments', { 'x-api-key': first }), 'same key as X-Api-Key');
      assert.equal((await get(server, '/v2/deployments', { authorization: `Bearer ${second}` })).status, 200, 'another bearer key has its own budget');
    });

    test('no header trick gives a key more than its budget', async () => {
      const key = await freshKey(server);
      for (let i = 0; i < RATE; i += 1) await get(server, '/v2/deployments', { 'x-api-key': key });
      assertLimited(await get(server, '/v2/deployments', { 'x-api-key': key }), 'over budget');
      // The server authenticates the bearer key when X-Api-Key is empty: the budget must follow the key it authenticates.
      const res = await get(server, '/v2/deployments', { 'x-api-key': '', authorization: `Bearer ${key}` });
      assertLimited(res, 'empty X-Api-Key next to the same key as bearer');
    });
  });

  describe('rate limiting of clients without a valid key', () => {
    let anonymousServer: TestServer;
    before(async () => {
      anonymousServer = await startTestServer('sqlite', {
        engine: false,
        limits: { rateLimitPerMinute: RATE, bodyLimitBytes: BODY_LIMIT, requestTimeoutMs: TIMEOUT_MS },
      });
    });
    after(async () => anonymousServer?.close());

    test('requests without a key are limited per client address, with 429 in the API error form', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < RATE; i += 1) statuses.push((await get(anonymousServer, i % 2 ? '/api-host/v2/deployments' : '/v2/deployments', {})).status);
      assert.deepEqual(statuses, Array(RATE).fill(401));
      // src/http/limits.ts means to count these per address; the 401 comes first, from the auth hook.
      assertLimited(await get(anonymousServer, '/v2/deployments', {}), 'no key, over the budget');
      assert.equal((await get(anonymousServer, '/ok', {})).status, 200, 'the health check stays open');
    });

    test('guessing keys is limited: a different wrong key on every request still runs out of budget', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < RATE * 4; i += 1)
        statuses.push((await get(anonymousServer, '/v2/deployments', { 'x-api-key': `berth_guess_${randomUUID()}` })).status);
      assert.ok(
        statuses.includes(429),
        `${statuses.length} guesses from one address, none limited (statuses: ${[...new Set(statuses)].join(', ')}); ` +
          'src/http/limits.ts says guessing keys is limited per client address, but failed authentications are never counted',
      );
    });
  });

  test('limit 0 turns rate limiting off', async () => {
    const unlimited = await startTestServer('sqlite', { engine: false, limits: { rateLimitPerMinute: 0 } });
    try {
      const statuses = new Set<number>();
      let limitHeader: string | null = null;
      for (let i = 0; i < 40; i += 1) {
        const res = await get(unlimited, '/v2/deployments', { 'x-api-key': unlimited.adminKey });
        statuses.add(res.status);
        limitHeader ??= res.headers.get('x-ratelimit-limit');
      }
      assert.deepEqual([...statuses], [200]);
      assert.equal(limitHeader, null);
    } finally {
      await unlimited.close();
    }
  });

  describe('body size limit', () => {
    const create = (size: number) => {
      const head = '{"name":"big-body","source":"external_docker","source_config":null,"source_revision_config":{"image_uri":"x:1"},"secrets":[]';
      return `${head}${' '.repeat(Math.max(0, size - head.length - 1))}}`;
    };

    test('exactly at the limit is read; one byte over is 413, at the root and under /api-host, and creates nothing', async () => {
      const key = await freshKey(server);
      const api = client(server.url, { key });
      const atLimit = await api('POST', '/v2/deployments', { rawBody: create(BODY_LIMIT) });
      assert.equal(Buffer.byteLength(create(BODY_LIMIT)), BODY_LIMIT);
      assert.equal(atLimit.status, 201, `a body of exactly ${BODY_LIMIT} bytes: ${atLimit.text.slice(0, 200)}`);
      for (const prefix of ['', '/api-host']) {
        const over = await api('PATCH', `${prefix}/v2/deployments/${atLimit.body.id}`, { rawBody: `{"display_name":"x"${' '.repeat(BODY_LIMIT)}}` });
        assert.equal(over.status, 413, `${prefix || 'root'}: ${over.text.slice(0, 200)}`);
        assertErrorForm(over, `413 ${prefix || 'root'}`);
        assert.equal(over.body.detail, 'Request body is too large.');
      }
      const after = await api('GET', `/v2/deployments/${atLimit.body.id}`);
      assert.equal(after.body.display_name, null, 'the oversize PATCH changed nothing');
    });

    test('an oversize body without Content-Length (chunked) is 413 too, and an announced oversize body is refused before it is sent', async () => {
      const key = await freshKey(server);
      const chunked = await rawExchange(server.url, async (socket) => {
        socket.write(
          `POST /api-host/v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        );
        for (let i = 0; i < 8; i += 1) {
          const chunk = `{"name":"${'x'.repeat(1000)}"`.slice(0, 1000);
          socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
          await sleep(5);
        }
        socket.write('0\r\n\r\n');
      });
      assert.equal(statusOf(chunked.answer), 413, chunked.answer.slice(0, 300));
      const parsed = parseRaw(chunked.answer);
      assert.equal(errorFormProblem(parsed.status, parsed.contentType, parsed.body), undefined);

      const announced = await rawExchange(server.url, (socket) => {
        socket.write(
          `POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\nConnection: close\r\n\r\n{"na`,
        );
      });
      // 413, not the 408 of the request timeout: refused on the announced length, at once.
      assert.equal(statusOf(announced.answer), 413, announced.answer.slice(0, 300));
      const workspaces = await client(server.url, { key })('GET', '/v1/workspaces');
      assert.equal(workspaces.body.length, 1, 'nothing was created');
    });

    test('an oversize body of another content type is refused in the API error form', async () => {
      const key = await freshKey(server);
      for (const contentType of ['text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded']) {
        const res = await client(server.url, { key })('POST', '/v1/workspaces', {
          rawBody: 'x'.repeat(BODY_LIMIT * 2),
          headers: { 'content-type': contentType },
        });
        assert.ok(res.status === 413 || res.status === 415, `${contentType}: ${res.status}`);
        assertErrorForm(res, contentType);
      }
    });
  });

  describe('request timeout', () => {
    test('a client that dribbles its body slower than the timeout gets 408, is disconnected, and creates nothing; others are served meanwhile', async () => {
      const key = await freshKey(server);
      const body = '{"name":"slow-body"}';
      const slow = rawExchange(server.url, async (socket) => {
        socket.write(
          `POST /api-host/v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        for (const char of body) {
          if (socket.destroyed) return;
          socket.write(char);
          await sleep(150);
        }
      });
      let slowEnded = false;
      void slow.then(
        () => (slowEnded = true),
        () => (slowEnded = true),
      );
      // While it stalls, another client is answered: before the stalled one is cut off.
      await sleep(200);
      const other = await get(server, '/ok', {});
      assert.equal(other.status, 200);
      assert.ok(!slowEnded, 'the server answered others while one client stalled (before its timeout)');
      const { answer, elapsedMs } = await slow;
      assert.equal(statusOf(answer), 408, answer.slice(0, 200));
      assert.ok(elapsedMs < TIMEOUT_MS + deadline(2500), `cut off after ${elapsedMs} ms`);
      const workspaces = await client(server.url, { key })('GET', '/v1/workspaces');
      assert.ok(
        workspaces.body.every((w: { name: string }) => w.name !== 'slow-body'),
        'the slow request created nothing',
      );
    });

    test('a client that never finishes its headers gets 408 and is disconnected', async () => {
      const { answer, elapsedMs } = await rawExchange(server.url, (socket) => {
        socket.write('GET /api-host/v2/deployments HTTP/1.1\r\nHost: x\r\nX-Api-');
      });
      assert.equal(statusOf(answer), 408, answer.slice(0, 200));
      assert.ok(elapsedMs < TIMEOUT_MS + deadline(2500), `cut off after ${elapsedMs} ms`);
    });

    test('408 and 431 answers are in the API error form', async () => {
      const { answer } = await rawExchange(server.url, (socket) => {
        socket.write('GET /v2/deployments HTTP/1.1\r\nHost: x\r\n');
      });
      const timeout = parseRaw(answer);
      assert.equal(timeout.status, 408);
      const big = await rawExchange(server.url, (socket) => {
        socket.write(`GET /v2/deployments?${'q'.repeat(20_000)}=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      });
      const tooLarge = parseRaw(big.answer);
      assert.equal(tooLarge.status, 431);
      const problems = [timeout, tooLarge]
        .map((r) => [r.status, errorFormProblem(r.status, r.contentType, r.body)] as const)
        .filter(([, problem]) => problem !== undefined)
        .map(([status, problem]) => `${status}: ${problem}`);
      assert.deepEqual(problems, [], 'answers from the HTTP layer (Fastify clientErrorHandler) should use {"detail": ...} like every other error');
    });
  });
});

describe('limits read from the environment by a real process', () => {
  test('BERTH_RATE_LIMIT_PER_MINUTE, BERTH_BODY_LIMIT_BYTES and BERTH_REQUEST_TIMEOUT_MS are honoured', { timeout: deadline(60_000) }, async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-abuse-'));
    const key = `berth_test_${randomUUID()}`;
    const berth = await spawnBerth({
      BERTH_DATA_DIR: dataDir,
      BERTH_BOOTSTRAP_API_KEY: key,
      BERTH_CONTAINER_RUNTIME: 'none',
      BERTH_ENGINE: 'off',
      BERTH_RATE_LIMIT_PER_MINUTE: '4',
      BERTH_BODY_LIMIT_BYTES: '2048',
      BERTH_REQUEST_TIMEOUT_MS: '1000',
      LOG_LEVEL: 'warn',
    });
    try {
      const api = client(berth.url, { key });
      const big = await api('POST', '/api-host/v1/workspaces', { body: { name: 'x'.repeat(3000) } });
      assert.equal(big.status, 413);
      assertErrorForm(big, '413 from the real process');
      const { answer, elapsedMs } = await rawExchange(berth.url, (socket) => {
        socket.write(`POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"na`);
      });
      assert.equal(statusOf(answer), 408);
      assert.ok(elapsedMs < 1000 + deadline(2500), `408 after ${elapsedMs} ms`);
      // The 413 and the 408 requests used 2 of the key's 4 requests a minute.
      assert.equal((await api('GET', '/v2/deployments')).status, 200);
      assert.equal((await api('GET', '/api-host/v2/deployments')).status, 200);
      assertLimited(await api('GET', '/v2/deployments'), 'fifth request of the real process');
    } finally {
      await stopBerth(berth);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
