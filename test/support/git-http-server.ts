import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface GitHttpOptions {
  /** Directory holding the bare repositories (GIT_PROJECT_ROOT). */
  root: string;
  /** Basic credentials every request must carry: a pair, or a check of the pair. */
  auth?: { username: string; password: string } | ((username: string, password: string) => boolean);
  /** Runs before a request is served; a promise that never settles holds the request. */
  onRequest?: (request: IncomingMessage) => void | Promise<void>;
}

export interface GitHttpBackend {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** Requests seen, as `METHOD /path`. */
  requests: string[];
  /** Kills CGI processes still running. */
  stop(): void;
}

const REPOSITORY_SUFFIX = /^(.*?)(\/info\/refs|\/git-upload-pack|\/git-receive-pack|\/HEAD|\/objects\/.*)$/;

/**
 * git's smart HTTP protocol served by the real `git http-backend` CGI program, one process
 * per request: the request body streams into it and its CGI header block (Status and
 * other headers, then a blank line) is turned into the HTTP response. `/owner/name/...`
 * finds `owner/name.git` as GitHub does.
 */
export function gitHttpBackend(options: GitHttpOptions): GitHttpBackend {
  const requests: string[] = [];
  const children = new Set<ChildProcess>();
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    requests.push(`${request.method} ${url.pathname}`);
    await options.onRequest?.(request);
    const user = authorize(request, options.auth);
    if (user === false) {
      response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      response.end('authentication required\n');
      return;
    }
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: options.root,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
      REQUEST_METHOD: request.method ?? 'GET',
      PATH_INFO: repositoryPath(options.root, decodeURIComponent(url.pathname)),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      REMOTE_ADDR: request.socket.remoteAddress ?? '127.0.0.1',
    };
    if (user !== null) env.REMOTE_USER = user;
    if (request.headers['content-length']) env.CONTENT_LENGTH = request.headers['content-length'];
    if (request.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = request.headers['content-encoding'];
    const protocol = request.headers['git-protocol'];
    if (typeof protocol === 'string') env.HTTP_GIT_PROTOCOL = protocol;

    const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.add(child);
    child.once('exit', () => children.delete(child));
    child.stderr.resume();
    request.pipe(child.stdin);
    child.stdin.on('error', () => undefined);
    await new Promise<void>((resolve) => {
      let head = Buffer.alloc(0);
      let headersSent = false;
      child.stdout.on('data', (chunk: Buffer) => {
        if (headersSent) {
          response.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = headerEnd(head);
        if (!end) return;
        const { status, headers } = parseCgiHeaders(head.subarray(0, end.index).toString('latin1'));
        response.writeHead(status, headers);
        headersSent = true;
        const body = head.subarray(end.index + end.length);
        if (body.length > 0) response.write(body);
      });
      child.once('close', () => {
        if (!headersSent) response.writeHead(502, { 'Content-Type': 'text/plain' });
        response.end();
        resolve();
      });
    });
  };
  return {
    handle,
    requests,
    stop: () => {
      for (const child of children) child.kill('SIGKILL');
    },
  };
}

export interface GitHttpServer {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

export async function startGitHttpServer(options: GitHttpOptions): Promise<GitHttpServer> {
  const backend = gitHttpBackend(options);
  const server = http.createServer((request, response) => {
    backend.handle(request, response).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: backend.requests,
    close: async () => {
      backend.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The user name when the credentials fit, null when none are required, false otherwise. */
function authorize(request: IncomingMessage, auth: GitHttpOptions['auth']): string | null | false {
  if (!auth) return null;
  const match = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  if (!match) return false;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return false;
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  const ok = typeof auth === 'function' ? auth(username, password) : auth.username === username && auth.password === password;
  return ok ? username : false;
}

function repositoryPath(root: string, pathname: string): string {
  const match = REPOSITORY_SUFFIX.exec(pathname);
  if (!match) return pathname;
  const repository = match[1] as string;
  const withSuffix = `${repository}.git`;
  return !existsSync(path.join(root, repository)) && existsSync(path.join(root, withSuffix)) ? `${withSuffix}${match[2]}` : pathname;
}

function headerEnd(buffer: Buffer): { index: number; length: number } | null {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { index: crlf, length: 4 };
  if (lf !== -1) return { index: lf, length: 2 };
  return null;
}

function parseCgiHeaders(block: string): { status: number; headers: Record<string, string> } {
  let status = 200;
  const headers: Record<string, string> = {};
  for (const line of block.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 200;
    else headers[name] = value;
  }
  return { status, headers };
}
