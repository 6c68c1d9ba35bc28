import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, as received (signatures are over these bytes). */
  body: string;
}

export type Answer = { status: number; body?: string; headers?: Record<string, string> };

/**
 * A real HTTP receiver on loopback for outbound webhooks. `answer` decides each response
 * (default 200); every request is kept in `received`.
 */
export async function startReceiver(answer: (request: Received) => Answer = () => ({ status: 200 })) {
  const received: Received[] = [];
  let decide = answer;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(request);
      const { status, body, headers } = decide(request);
      res.writeHead(status, headers);
      res.end(body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    answerWith(next: (request: Received) => Answer) {
      decide = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
