import { createPublicKey, createVerify, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gitHttpBackend } from './git-http-server.js';

export interface StandInRepository {
  id: number;
  owner: string;
  name: string;
  defaultBranch: string;
  private?: boolean;
}

export interface GitHubStandInOptions {
  appId: number;
  installationId: number;
  repositories: StandInRepository[];
  /** Serves `<owner>/<name>.git` from here over smart HTTP, for installation tokens only. */
  gitRoot: string;
  /** Page size cap, small so that listing takes several pages. */
  maxPerPage?: number;
  /** Lifetime of installation tokens; GitHub's is one hour. */
  tokenLifetimeMs?: number;
}

export interface GitHubStandIn {
  url: string;
  /** The app's private key in PKCS#1 PEM, as GitHub hands it out. */
  privateKey: string;
  /** Every call, as `METHOD /path?query`. */
  calls: string[];
  /** Installation tokens issued so far. */
  tokens: string[];
  /** Requests refused, with why. */
  refusals: string[];
  /** Revokes every token issued so far, as GitHub does when an installation is suspended. */
  revokeTokens(): void;
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';

/**
 * A local stand-in for the parts of GitHub's REST API that the github provider calls, with
 * bodies shaped as GitHub documents them:
 * - `POST /app/installations/{id}/access_tokens` checks the app JWT (RS256 signature with
 *   the app's key, `iss` = app id, not expired) and issues a token;
 * - `GET /installation/repositories` checks the installation token and pages with `Link`;
 * - git smart HTTP for the repositories, with the token as basic-auth password.
 */
export async function startGitHubStandIn(options: GitHubStandInOptions): Promise<GitHubStandIn> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const verifier = createPublicKey(publicKey);
  const calls: string[] = [];
  const tokens: string[] = [];
  const refusals: string[] = [];
  const expiries = new Map<string, number>();
  const lifetime = options.tokenLifetimeMs ?? 60 * 60 * 1000;
  const validToken = (token: string) => (expiries.get(token) ?? 0) > Date.now();
  const git = gitHttpBackend({
    root: options.gitRoot,
    auth: (username, password) => {
      const ok = username === 'x-access-token' && validToken(password);
      if (!ok) refusals.push(`git: bad credentials for ${username}`);
      return ok;
    },
  });
  let base = '';

  const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
    response.end(JSON.stringify(body));
  };
  const refuse = (response: ServerResponse, status: number, why: string) => {
    refusals.push(why);
    json(response, status, { message: status === 401 ? 'Bad credentials' : 'Not Found', documentation_url: DOCS, status: String(status) });
  };

  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', base);
    calls.push(`${request.method} ${url.pathname}${url.search}`);
    const tokenPath = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
    if (request.method === 'POST' && tokenPath) {
      request.resume();
      const problem = checkAppJwt(request, verifier, options.appId);
      if (problem) return refuse(response, 401, `app jwt: ${problem}`);
      if (Number(tokenPath[1]) !== options.installationId) return refuse(response, 404, 'unknown installation');
      const token = `ghs_${randomBytes(18).toString('base64url')}`;
      const expiresAt = Date.now() + lifetime;
      tokens.push(token);
      expiries.set(token, expiresAt);
      return json(response, 201, {
        token,
        expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { contents: 'read', metadata: 'read' },
        repository_selection: 'selected',
      });
    }
    if (request.method === 'GET' && url.pathname === '/installation/repositories') {
      const token = /^(?:token|bearer)\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
      if (!token || !validToken(token)) return refuse(response, 401, 'installation token missing, unknown or expired');
      const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 30), options.maxPerPage ?? 100);
      const page = Math.max(1, Number(url.searchParams.get('page') ?? 1));
      const lastPage = Math.max(1, Math.ceil(options.repositories.length / perPage));
      const slice = options.repositories.slice((page - 1) * perPage, page * perPage);
      const link = (n: number, rel: string) => `<${base}/installation/repositories?per_page=${perPage}&page=${n}>; rel="${rel}"`;
      const links = [
        ...(page > 1 ? [link(page - 1, 'prev'), link(1, 'first')] : []),
        ...(page < lastPage ? [link(page + 1, 'next'), link(lastPage, 'last')] : []),
      ];
      return json(
        response,
        200,
        {
          total_count: options.repositories.length,
          repository_selection: 'selected',
          repositories: slice.map((repository) => repositoryBody(base, repository)),
        },
        links.length ? { Link: links.join(', ') } : {},
      );
    }
    if (/\/(info\/refs|git-upload-pack|git-receive-pack)$/.test(url.pathname)) {
      git.handle(request, response).catch(() => response.destroy());
      return;
    }
    request.resume();
    return refuse(response, 404, `no such route: ${request.method} ${url.pathname}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    privateKey,
    calls,
    tokens,
    refusals,
    revokeTokens: () => expiries.clear(),
    close: async () => {
      git.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What is wrong with the request's app JWT, or null if it is GitHub-valid. */
function checkAppJwt(request: IncomingMessage, key: KeyObject, appId: number): string | null {
  const jwt = /^bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (!jwt) return 'no bearer token';
  const [header, payload, signature] = jwt.split('.');
  if (!header || !payload || !signature) return 'not a JWT';
  const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (decode(header).alg !== 'RS256') return 'not RS256';
  const verify = createVerify('RSA-SHA256');
  verify.update(`${header}.${payload}`);
  if (!verify.verify(key, Buffer.from(signature, 'base64url'))) return 'bad signature';
  const claims = decode(payload);
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== String(appId)) return `iss ${String(claims.iss)} is not the app id`;
  if (typeof claims.exp !== 'number' || claims.exp <= now) return 'expired';
  if (typeof claims.iat !== 'number' || claims.iat > now + 60) return 'issued in the future';
  if (claims.exp - claims.iat > 600) return 'lives longer than 10 minutes';
  return null;
}

/** A repository as GitHub's "List repositories accessible to the app installation" shows it (abridged). */
function repositoryBody(base: string, repository: StandInRepository) {
  const fullName = `${repository.owner}/${repository.name}`;
  const host = new URL(base).host;
  return {
    id: repository.id,
    node_id: Buffer.from(`Repository${repository.id}`).toString('base64'),
    name: repository.name,
    full_name: fullName,
    private: repository.private ?? true,
    owner: { login: repository.owner, id: repository.id + 1000, type: 'Organization', html_url: `${base}/${repository.owner}` },
    html_url: `${base}/${fullName}`,
    description: null,
    fork: false,
    url: `${base}/repos/${fullName}`,
    git_url: `git://${host}/${fullName}.git`,
    ssh_url: `git@${host}:${fullName}.git`,
    clone_url: `${base}/${fullName}.git`,
    default_branch: repository.defaultBranch,
    visibility: repository.private === false ? 'public' : 'private',
    archived: false,
    disabled: false,
    permissions: { admin: false, push: false, pull: true },
    created_at: '2024-01-02T03:04:05Z',
    updated_at: '2024-01-02T03:04:05Z',
    pushed_at: '2024-01-02T03:04:05Z',
  };
}
