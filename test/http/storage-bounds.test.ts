import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { announce, recordLog } from '../../src/events/recorder.js';
import { type Client, client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { describeEachDatabase } from '../support/database.js';
import { eventually } from '../support/runtimes.js';

const MiB = 1024 * 1024;

const newDeployment = (fields: { resource_spec?: unknown; secrets?: { name: string; value: string }[] } = {}) => ({
  name: `bounds-${Math.random().toString(36).slice(2, 10)}`,
  source: 'external_docker',
  source_config: { resource_spec: fields.resource_spec ?? null },
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets: fields.secrets ?? [],
});

/** `count` secrets of `size` characters each; their values are recognisable in an answer. */
const secretsOf = (count: number, size: number) =>
  Array.from({ length: count }, (_, i) => ({ name: `SECRET_${i}`, value: `marker${i}-${'s'.repeat(size - 8 - String(i).length)}` }));

/** A resource spec whose JSON is about `bytes` bytes. */
const specOf = (bytes: number) => ({ annotations: Object.fromEntries(Array.from({ length: Math.ceil(bytes / 1000) }, (_, i) => [`a${i}`, 'v'.repeat(990)])) });

/**
 * Waits for a line in the server's log; the server's own word that something happened. On
 * a busy machine filling a stream's buffers took longer than the fixed 20 s this once had.
 */
async function logged(server: TestServer, pattern: RegExp): Promise<void> {
  await eventually(async () => server.logs.some((line) => pattern.test(line)), `the server to log ${pattern}`, 60_000);
}

/**
 * A client that sends a request and reads nothing until the server has given up on it;
 * then it reads what is left. Answers the bytes of the body it got and the length announced.
 */
async function slowReader(server: TestServer, key: string, path: string, givenUp: RegExp): Promise<{ received: number; announced: number }> {
  const { port } = new URL(server.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.pause();
  socket.on('error', () => {});
  const chunks: Buffer[] = [];
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nConnection: close\r\n\r\n`);
  try {
    await logged(server, givenUp);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    await closed;
  } finally {
    // Never left paused: a failed wait must not leave a connection no one reads.
    socket.destroy();
  }
  const answer = Buffer.concat(chunks);
  const headEnd = answer.indexOf('\r\n\r\n');
  const announced = Number(/content-length: (\d+)/i.exec(answer.subarray(0, headEnd).toString())?.[1] ?? -1);
  return { received: answer.length - headEnd - 4, announced };
}

describeEachDatabase('what a deployment may store, and answers about it, are bounded', (kind) => {
  let server: TestServer;
  let api: Client;
  let bigPagesKey: string | undefined;
  before(async () => {
    // Bodies larger than the default limit, so that only the storage bounds refuse them.
    server = await startTestServer(kind, { engine: false, limits: { bodyLimitBytes: 4 * MiB, responseWriteTimeoutMs: 1000 } });
    api = client(server.url, { key: server.adminKey });
  });
  after(async () => server?.close());

  test('a resource_spec over 64 KiB of JSON is refused with a 422 naming the limit, on every write', async () => {
    const created = await api('POST', '/v2/deployments', { body: newDeployment({ resource_spec: specOf(60_000) }) });
    assert.equal(created.status, 201, created.text.slice(0, 300));
    const big = specOf(70_000);
    const writes = [
      await api('POST', '/v2/deployments', { body: newDeployment({ resource_spec: big }) }),
      await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { source_config: { resource_spec: big } } }),
      await api('POST', `/v2/deployments/${created.body.id}/revisions`, { body: { source_config: { resource_spec: big } } }),
    ];
    for (const res of writes) {
      assert.equal(res.status, 422, res.text.slice(0, 300));
      assert.deepEqual(res.body.detail[0].loc, ['body', 'source_config', 'resource_spec']);
      assert.match(res.body.detail[0].msg, /at most 65536 bytes \(64 KiB\)/);
      assert.ok(res.text.length < 2000);
    }
    const revisions = await api('GET', `/v2/deployments/${created.body.id}/revisions`);
    assert.equal(revisions.body.resources.length, 1, 'no revision was added');
  });

  test('secrets over 1 MiB in all are refused with a 422 naming the limit that echoes none of them', async () => {
    const fits = secretsOf(16, 64_000);
    const created = await api('POST', '/v2/deployments', { body: newDeployment({ secrets: fits }) });
    assert.equal(created.status, 201, created.text.slice(0, 300));
    const tooMuch = secretsOf(20, 60_000);
    const writes = [
      await api('POST', '/v2/deployments', { body: newDeployment({ secrets: tooMuch }) }),
      await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { secrets: tooMuch } }),
      await api('POST', `/v2/deployments/${created.body.id}/revisions`, { body: { secrets: tooMuch } }),
    ];
    for (const res of writes) {
      assert.equal(res.status, 422, res.text.slice(0, 300));
      assert.deepEqual(res.body.detail[0].loc, ['body', 'secrets']);
      assert.match(res.body.detail[0].msg, /at most 1048576 bytes \(1 MiB\) in all/);
      assert.doesNotMatch(res.text, /marker\d/);
    }
    const revisions = await api('GET', `/v2/deployments/${created.body.id}/revisions`);
    assert.equal(revisions.body.resources.length, 1, 'no revision was added');
  });

  test('a page of deployments ends early at about 8 MiB, and its offset leads on to every deployment once', async () => {
    const own = await api('POST', '/v1/workspaces', { body: { name: `pages-${kind}-${Date.now()}` } });
    const key = await api('POST', '/v1/api-keys', { body: { workspace_id: own.body.id } });
    bigPagesKey = key.body.key;
    const workspace = client(server.url, { key: key.body.key });
    const ids: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const res = await workspace('POST', '/v2/deployments', { body: newDeployment({ secrets: secretsOf(16, 60_000) }) });
      assert.equal(res.status, 201, res.text.slice(0, 200));
      ids.push(res.body.id);
    }
    const first = await workspace('GET', '/v2/deployments?limit=100');
    assert.equal(first.status, 200);
    assert.ok(first.text.length <= 8 * MiB, `a page of ${first.text.length} bytes`);
    assert.ok(first.body.resources.length > 0 && first.body.resources.length < 10, `${first.body.resources.length} deployments on the first page`);
    assert.equal(first.body.offset, first.body.resources.length);
    const seen: string[] = first.body.resources.map((d: { id: string }) => d.id);
    let offset = first.body.offset as number;
    for (let pages = 0; pages < 10; pages += 1) {
      const next = await workspace('GET', `/v2/deployments?limit=100&offset=${offset}`);
      if (next.body.resources.length === 0) break;
      seen.push(...next.body.resources.map((d: { id: string }) => d.id));
      offset = next.body.offset;
    }
    assert.deepEqual([...seen].sort(), [...ids].sort(), 'every deployment exactly once');
  });

  test('a page of revisions ends early at about 8 MiB, and its offset leads on to every revision once', async () => {
    const created = await api('POST', '/v2/deployments', { body: newDeployment() });
    // Control characters are six bytes each once escaped in JSON.
    const packages = Array.from({ length: 200 }, () => '\u0001'.repeat(500));
    for (let i = 0; i < 14; i += 1) {
      const res = await api('POST', `/v2/deployments/${created.body.id}/revisions`, { body: { tracked_packages: packages } });
      assert.equal(res.status, 201, res.text.slice(0, 200));
    }
    const first = await api('GET', `/v2/deployments/${created.body.id}/revisions?limit=100`);
    assert.ok(Buffer.byteLength(first.text) <= 8 * MiB, `a page of ${first.text.length} bytes`);
    assert.ok(first.body.resources.length < 15, `${first.body.resources.length} revisions on the first page`);
    const numbers: number[] = first.body.resources.map((r: { revision_number: number }) => r.revision_number);
    let offset = first.body.offset as number;
    for (let pages = 0; pages < 15; pages += 1) {
      const next = await api('GET', `/v2/deployments/${created.body.id}/revisions?limit=100&offset=${offset}`);
      if (next.body.resources.length === 0) break;
      numbers.push(...next.body.resources.map((r: { revision_number: number }) => r.revision_number));
      offset = next.body.offset;
    }
    assert.deepEqual(
      numbers,
      Array.from({ length: 15 }, (_, i) => 15 - i),
      'every revision once, newest first',
    );
  });

  test('a client that does not read its answer is disconnected after the write timeout', async () => {
    // The page test's workspace lists about 8 MiB: more than the socket buffers take.
    assert.ok(bigPagesKey, 'the page test made a workspace of large deployments');
    const { received, announced } = await slowReader(server, bigPagesKey, '/v2/deployments?limit=100', /did not read the answer in time/);
    assert.ok(announced > 4 * MiB, `an answer of ${announced} bytes`);
    assert.ok(received < announced, `got ${received} of ${announced} bytes`);
  });

  test('log pages end early at about 8 MiB; an event stream whose client does not read is closed after the write timeout', async () => {
    const created = await api('POST', '/v2/deployments', { body: newDeployment() });
    for (let i = 0; i < 200; i += 1) {
      await recordLog(server.berth.db, {
        deploymentId: created.body.id,
        revisionId: created.body.latest_revision_id,
        logType: 'deploy',
        level: 'INFO',
        message: `line ${i} ${'x'.repeat(50_000)}`,
      });
    }
    // A page of log lines ends early too, its next_offset leading on to every line once.
    const lines: number[] = [];
    let cursor = '';
    for (let pages = 0; pages < 10; pages += 1) {
      const page = await api(
        'GET',
        `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=deploy&limit=1000&offset=${cursor}`,
      );
      assert.equal(page.status, 200);
      assert.ok(Buffer.byteLength(page.text) <= 8 * MiB, `a page of ${page.text.length} bytes`);
      lines.push(...page.body.logs.map((line: { message: string }) => Number(line.message.split(' ')[1])));
      if (page.body.next_offset === null) break;
      cursor = page.body.next_offset;
    }
    assert.deepEqual(
      lines,
      Array.from({ length: 200 }, (_, i) => i),
    );

    // The kernel may buffer many megabytes of a loopback stream its reader does not read
    // (receive buffers grow to 32 MiB here): lines keep coming until the server gives up.
    let feeding = true;
    let written = 200;
    const feed = (async () => {
      while (feeding && written < 2_000) {
        await recordLog(server.berth.db, {
          deploymentId: created.body.id,
          revisionId: created.body.latest_revision_id,
          logType: 'deploy',
          level: 'INFO',
          message: `line ${written} ${'x'.repeat(50_000)}`,
        });
        announce(server.berth.bus, created.body.id);
        written += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      const { received } = await slowReader(server, server.adminKey, `/v2/deployments/${created.body.id}/events`, /did not read the event stream in time/);
      assert.ok(received < written * 50_000, `got ${received} bytes of the stream`);
    } finally {
      feeding = false;
      await feed;
    }
  });
});
