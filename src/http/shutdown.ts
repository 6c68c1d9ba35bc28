import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Lets a shutdown finish while clients hold connections that carry no request: one opened
 * and never used (a client's spare, a port scanner), or a keep-alive connection between
 * requests. Node's server.close() waits for those until their headers timeout (60 s), past
 * the grace a process manager gives; Fastify's own handling closes only the idle keep-alive
 * kind. Connections with a request in flight are left to finish (event streams and long
 * polls end themselves on close).
 */
export function installConnectionShutdown(app: FastifyInstance): void {
  const open = new Set<Socket>();
  /** Requests in flight per connection (more than one only with pipelining). */
  const busy = new Map<Socket, number>();
  let closing = false;
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      busy.delete(socket);
    });
  });
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1;
      if (left > 0) busy.set(socket, left);
      else busy.delete(socket);
      if (closing && left <= 0) socket.destroy();
    });
  });
  app.addHook('preClose', async () => {
    closing = true;
    for (const socket of open) if (!busy.has(socket)) socket.destroy();
  });
}
