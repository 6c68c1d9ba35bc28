import type { FastifyReply, FastifyRequest } from 'fastify';
import { armWriteDeadline, drained } from './write-deadline.js';

export const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
} as const;

const KEEP_ALIVE_MS = 15_000;

export interface EventStream {
  /** Aborts when the client goes away. */
  readonly gone: AbortSignal;
  /** Writes one event; resolves once the client has taken it in (slow clients slow the writer down). */
  send(event: { id: number | string; event: string; data: unknown }): Promise<void>;
  /** A comment line, which clients ignore: keep-alives and the reason a stream ends. */
  comment(text: string): void;
  end(): void;
}

/**
 * Takes the answer over from Fastify and opens a Server-Sent Events stream on it: the
 * headers, a first comment, and a keep-alive comment every 15 s. A client that stops
 * reading for longer than `writeTimeoutMs` is disconnected.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply, writeTimeoutMs: number): EventStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...EVENT_STREAM_HEADERS,
    'x-request-id': request.id,
    // A stream ends at shutdown after the server closed its idle connections; a kept-alive
    // connection would then hold the shutdown until its keep-alive timeout.
    connection: 'close',
  });
  res.write(': connected\n\n');
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  // A client that has not taken in what was sent is given the write timeout, idle or not.
  const keepAlive = setInterval(() => {
    if (!res.write(': keep-alive\n\n')) drained(res, writeTimeoutMs, gone.signal, request.log).catch(() => {});
  }, KEEP_ALIVE_MS);
  return {
    gone: gone.signal,
    async send({ id, event, data }) {
      if (!res.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) {
        await drained(res, writeTimeoutMs, gone.signal, request.log);
      }
    },
    comment(text) {
      if (!res.destroyed) res.write(`: ${text.replace(/\n/g, ' ')}\n\n`);
    },
    end() {
      clearInterval(keepAlive);
      // The stream's last bytes get the write timeout too: a client that stopped reading
      // kept an ended stream, and with it the server's shutdown, waiting for ever.
      armWriteDeadline(res, writeTimeoutMs, request.log);
      res.end();
    },
  };
}
