import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

/**
 * A client that stops reading leaves its answer in the server's memory (a large page is
 * megabytes) for as long as the connection lasts. Every answer therefore has this long,
 * from when it starts to be written, to be written out; otherwise the connection is
 * closed and the memory freed.
 */
export function installWriteDeadline(app: FastifyInstance, timeoutMs: number): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    armWriteDeadline(reply.raw, timeoutMs, request.log);
    done(null, payload);
  });
}

/** Closes the connection unless the response is written out within `timeoutMs`. */
export function armWriteDeadline(res: ServerResponse, timeoutMs: number, log: FastifyBaseLogger): void {
  const timer = setTimeout(() => {
    if (res.writableFinished || res.destroyed) return;
    log.warn({ timeoutMs, unwritten: res.writableLength }, 'the client did not read the answer in time; connection closed');
    res.destroy();
  }, timeoutMs);
  timer.unref();
  const clear = () => clearTimeout(timer);
  res.once('finish', clear);
  res.once('close', clear);
}

/**
 * For answers written piece by piece (event streams): resolves once the client has read
 * what was buffered, and closes the connection if it has not within `timeoutMs`.
 * Rejects when the response closes or `signal` aborts.
 */
export async function drained(res: ServerResponse, timeoutMs: number, signal: AbortSignal, log: FastifyBaseLogger): Promise<void> {
  try {
    await once(res, 'drain', { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
  } catch (error) {
    if (!signal.aborted && !res.destroyed) {
      log.warn({ timeoutMs, unwritten: res.writableLength }, 'the client did not read the event stream in time; connection closed');
      res.destroy();
    }
    throw error;
  }
}
