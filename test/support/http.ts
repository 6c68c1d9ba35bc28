import net from 'node:net';
import { undeclaredAnswer } from './declared-codes.js';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text, sent as is (for malformed JSON and similar). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Sent as X-Api-Key unless null. */
  key?: string | null;
  tenant?: string;
}

/** A small client for tests: JSON in, JSON out, every header explicit; an error answer whose code its route does not declare throws (declared-codes.ts). */
export function client(baseUrl: string, defaults: { key?: string; tenant?: string } = {}) {
  return async function request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? defaults.key : options.key;
    if (key) headers['X-Api-Key'] = key;
    const tenant = options.tenant ?? defaults.tenant;
    if (tenant) headers['X-Tenant-Id'] = tenant;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['Content-Type'] = 'application/json';
    }
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    // An event stream never ends by itself: its headers are the answer (tests read streams with the client).
    const stream = response.headers.get('content-type')?.startsWith('text/event-stream');
    if (stream) await response.body?.cancel();
    const text = stream ? '' : await response.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    const undeclared = await undeclaredAnswer(method, path, response.status, parsed);
    if (undeclared) throw new Error(`the contract is broken: ${undeclared}`);
    return { status: response.status, body: parsed as T, text, headers: response.headers };
  };
}

export type Client = ReturnType<typeof client>;

/** One HTTP/1.1 exchange on a connection of its own, the body sent in parts as the test decides. */
export interface RawExchange {
  socket: net.Socket;
  /** Whether the server has answered (a status line arrived). */
  answered(): boolean;
  /** The status and everything the server sent, once it answered and closed the connection. */
  response: Promise<{ status: number; text: string }>;
}

/**
 * Sends the request line, `Connection: close`, the headers and `firstBytes`, nothing more:
 * the test writes the rest of the body (or not) on `socket`. For checks that a server
 * answers before it reads a body, which `fetch` cannot show.
 */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string | number>,
  firstBytes: Buffer = Buffer.alloc(0),
): RawExchange {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString('latin1');
  });
  const head = [
    `${method} ${path} HTTP/1.1`,
    'Host: berth',
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    '',
    '',
  ];
  socket.write(Buffer.concat([Buffer.from(head.join('\r\n'), 'latin1'), firstBytes]));
  const response = new Promise<{ status: number; text: string }>((resolve) => {
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), text: received }));
  });
  return { socket, answered: () => /^HTTP\/1\.1 \d{3}/.test(received), response };
}
