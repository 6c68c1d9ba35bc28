import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import Fastify from 'fastify';
import { type EventStream, openEventStream } from '../../src/http/sse.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';

const WRITE_TIMEOUT_MS = 300;

test('an event stream ended while its client reads nothing is closed after the write timeout, so it cannot hold a shutdown', async (t) => {
  const app = Fastify();
  let opened: { stream: EventStream; res: ServerResponse } | undefined;
  app.get('/stream', async (request, reply) => {
    opened = { stream: openEventStream(request, reply, WRITE_TIMEOUT_MS), res: reply.raw };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as net.AddressInfo;
  const client = net.connect(port, '127.0.0.1');
  client.on('error', () => {});
  t.after(async () => {
    client.destroy();
    // A stream the fix failed to close would otherwise hold app.close() for ever.
    opened?.res.destroy();
    await app.close();
  });
  // A client that asks for the stream and then reads nothing at all.
  client.pause();
  client.write('GET /stream HTTP/1.1\r\nHost: berth\r\n\r\n');
  const { stream, res } = await eventually(async () => opened, 'the stream to open');

  // What the stream sends piles up in the kernel's buffers on both sides, then in the
  // server's own: the state of a stream whose client stopped reading a while ago.
  let written = 0;
  while (res.writableLength === 0) {
    stream.comment('x'.repeat(64 * 1024));
    written += 64 * 1024;
    assert.ok(written < 512 * 1024 * 1024, 'the buffers never filled');
    // Let the socket write what the kernel takes before trying again.
    await new Promise((resolve) => setImmediate(resolve));
  }

  // The route ends it (its events are over, or the server is closing).
  const closed = once(res, 'close');
  stream.end();
  const bound = deadline(10_000);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    closed.then(() => 'closed'),
    new Promise<string>((resolve) => {
      timer = setTimeout(resolve, bound, 'still open');
    }),
  ]);
  clearTimeout(timer);
  // Before the fix the answer's last bytes waited for the client for ever, and Fastify's
  // close (a shutdown) with them.
  assert.equal(outcome, 'closed', `the stream was still open ${bound} ms after it ended`);
  assert.ok(res.destroyed);
});
