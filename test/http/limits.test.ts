import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { deadline } from '../support/deadline.js';

describe('abuse limits', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite', { engine: false, limits: { rateLimitPerMinute: 5, bodyLimitBytes: 2048, requestTimeoutMs: 1000 } });
  });
  after(async () => server.close());

  test('each key gets its own budget; past it, 429 with Retry-After in the API error form', async () => {
    const api = client(server.url, { key: server.adminKey });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await api('GET', '/v2/deployments')).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    const limited = await api('GET', '/v2/deployments');
    assert.equal(limited.status, 429);
    assert.match(limited.body.detail, /Rate limit exceeded: at most 5 requests per minute/);
    assert.ok(Number(limited.headers.get('retry-after')) > 0);

    const other = await server.berth.services.tenancy.createOrganization('limits-other');
    const otherApi = client(server.url, { key: other?.apiKey });
    assert.equal((await otherApi('GET', '/v2/deployments')).status, 200, 'another key is not limited by the first one');
    assert.equal((await client(server.url)('GET', '/ok')).status, 200, 'the health check is never limited');
  });

  test('a body over the limit gets 413 with a JSON detail, and nothing is created', async () => {
    const other = await server.berth.services.tenancy.createOrganization('limits-body');
    const api = client(server.url, { key: other?.apiKey });
    const res = await api('POST', '/v1/workspaces', { body: { name: 'x'.repeat(4096) } });
    assert.equal(res.status, 413);
    assert.equal(res.body.detail, 'Request body is too large.');
    const workspaces = await api('GET', '/v1/workspaces');
    assert.equal(workspaces.body.length, 1);
  });

  test('a client that does not finish its request in time gets 408 and is disconnected', async () => {
    const { port } = new URL(server.url);
    const other = await server.berth.services.tenancy.createOrganization('limits-slow');
    const key = other?.apiKey as string;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        // Headers announce a body that never comes.
        socket.write(`POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`);
      });
      let data = '';
      socket.on('data', (chunk) => {
        data += chunk.toString();
      });
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
      setTimeout(() => reject(new Error('the server kept the connection open')), deadline(10_000)).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 408/);
    const workspaces = await client(server.url, { key })('GET', '/v1/workspaces');
    assert.equal(workspaces.body.length, 1, 'the half-sent request created nothing');
  });
});
