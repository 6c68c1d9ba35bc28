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
  /** Commit statuses accepted (POST /repos/{owner}/{repo}/statuses/{sha}), in order. */
  statuses: StandInCommitStatus[];
  /** Deployments created (POST /repos/{owner}/{repo}/deployments), in order; `id` is GitHub's. */
  deployments: StandInDeployment[];
  /** Deployment statuses accepted (POST …/deployments/{id}/statuses), in order. */
  deploymentStatuses: StandInDeploymentStatus[];
  /** The next `times` API calls whose path matches answer 500, as GitHub does in an outage. */
  failNext(path: RegExp, times: number): void;
  /** Revokes every token issued so far, as GitHub does when an installation is suspended. */
  revokeTokens(): void;
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';

export interface StandInCommitStatus {
  repository: string;
  sha: string;
  state: string;
  context: string;
  description: string | null;
  target_url: string | null;
}

export interface StandInDeployment {
  id: number;
  repository: string;
  ref: string;
  environment: string;
  description: string | null;
  auto_merge: unknown;
  required_contexts: unknown;
}

export interface StandInDeploymentStatus {
  repository: string;
  deployment_id: number;
  state: string;
  description: string | null;
  log_url: string | null;
  environment_url: string | null;
}

const COMMIT_STATES = ['error', 'failure', 'pending', 'success'];
const DEPLOYMENT_STATES = ['error', 'failure', 'inactive', 'in_progress', 'queued', 'pending', 'success'];

/**
 * A local stand-in for the parts of GitHub's REST API that the github provider calls, with
 * bodies shaped as GitHub documents them:
 * - `POST /app/installations/{id}/access_tokens` checks the app JWT (RS256 signature with
 *   the app's key, `iss` = app id, not expired) and issues a token;
 * - `GET /installation/repositories` checks the installation token and pages with `Link`;
 * - `POST /repos/{owner}/{repo}/statuses/{sha}`, `POST /repos/{owner}/{repo}/deployments`
 *   and `POST /repos/{owner}/{repo}/deployments/{id}/statuses` check the installation token
 *   and validate as GitHub does (states, the 140-character description, a full commit sha,
 *   a known deployment), answering 201 with the created resource or 422/404;
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
  const statuses: StandInCommitStatus[] = [];
  const deployments: StandInDeployment[] = [];
  const deploymentStatuses: StandInDeploymentStatus[] = [];
  const failures: { path: RegExp; times: number }[] = [];
  let nextId = 1000;
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
    const repoPath = /^\/repos\/([^/]+)\/([^/]+)\/(statuses\/([^/]+)|deployments|deployments\/(\d+)\/statuses)$/.exec(url.pathname);
    if (request.method === 'POST' && repoPath) {
      const token = /^(?:token|bearer)\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
      if (!token || !validToken(token)) {
        request.resume();
        return refuse(response, 401, 'installation token missing, unknown or expired');
      }
      const failure = failures.find((f) => f.times > 0 && f.path.test(url.pathname));
      if (failure) {
        failure.times -= 1;
        request.resume();
        return json(response, 500, { message: 'Server Error' });
      }
      readJson(request)
        .then((body) => {
          const [, owner, name, , sha, deploymentId] = repoPath;
          const repository = `${owner}/${name}`;
          const created = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
          const text = (key: string) => (typeof body[key] === 'string' ? (body[key] as string) : null);
          const invalid = (message: string, field: string) =>
            json(response, 422, { message, errors: [{ resource: 'Status', field, code: 'invalid' }], documentation_url: DOCS, status: '422' });
          if (sha !== undefined) {
            if (!/^[0-9a-f]{40}$/.test(sha)) return invalid(`No commit found for SHA: ${sha}`, 'sha');
            const state = text('state');
            if (!state || !COMMIT_STATES.includes(state)) return invalid('Validation Failed', 'state');
            if ((text('description') ?? '').length > 140) return invalid('description is too long (maximum is 140 characters)', 'description');
            const status = { repository, sha, state, context: text('context') ?? 'default', description: text('description'), target_url: text('target_url') };
            statuses.push(status);
            const id = nextId++;
            return json(response, 201, {
              url: `${base}/repos/${repository}/statuses/${sha}`,
              id,
              node_id: Buffer.from(`StatusContext${id}`).toString('base64'),
              state,
              description: status.description,
              target_url: status.target_url,
              context: status.context,
              created_at: created,
              updated_at: created,
              creator: { login: 'berth[bot]', id: 1, type: 'Bot' },
            });
          }
          if (deploymentId !== undefined) {
            const deployment = deployments.find((d) => d.id === Number(deploymentId) && d.repository === repository);
            if (!deployment) return refuse(response, 404, `no deployment ${deploymentId}`);
            const state = text('state');
            if (!state || !DEPLOYMENT_STATES.includes(state)) return invalid('Validation Failed', 'state');
            const status = {
              repository,
              deployment_id: deployment.id,
              state,
              description: text('description'),
              log_url: text('log_url'),
              environment_url: text('environment_url'),
            };
            deploymentStatuses.push(status);
            const id = nextId++;
            return json(response, 201, {
              url: `${base}/repos/${repository}/deployments/${deployment.id}/statuses/${id}`,
              id,
              node_id: Buffer.from(`DeploymentStatus${id}`).toString('base64'),
              state,
              creator: { login: 'berth[bot]', id: 1, type: 'Bot' },
              description: status.description ?? '',
              environment: deployment.environment,
              target_url: status.log_url ?? '',
              log_url: status.log_url ?? '',
              environment_url: status.environment_url ?? '',
              created_at: created,
              updated_at: created,
              deployment_url: `${base}/repos/${repository}/deployments/${deployment.id}`,
              repository_url: `${base}/repos/${repository}`,
            });
          }
          const ref = text('ref');
          if (!ref) return invalid('Validation Failed', 'ref');
          const id = nextId++;
          const deployment = {
            id,
            repository,
            ref,
            environment: text('environment') ?? 'production',
            description: text('description'),
            auto_merge: body.auto_merge,
            required_contexts: body.required_contexts,
          };
          deployments.push(deployment);
          return json(response, 201, {
            url: `${base}/repos/${repository}/deployments/${id}`,
            id,
            node_id: Buffer.from(`Deployment${id}`).toString('base64'),
            sha: ref,
            ref,
            task: 'deploy',
            payload: {},
            original_environment: deployment.environment,
            environment: deployment.environment,
            description: deployment.description,
            creator: { login: 'berth[bot]', id: 1, type: 'Bot' },
            created_at: created,
            updated_at: created,
            statuses_url: `${base}/repos/${repository}/deployments/${id}/statuses`,
            repository_url: `${base}/repos/${repository}`,
            transient_environment: body.transient_environment === true,
            production_environment: false,
          });
        })
        .catch(() => json(response, 400, { message: 'Problems parsing JSON', documentation_url: DOCS, status: '400' }));
      return;
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
    statuses,
    deployments,
    deploymentStatuses,
    failNext: (path, times) => {
      failures.push({ path, times });
    },
    revokeTokens: () => expiries.clear(),
    close: async () => {
      git.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
  return body as Record<string, unknown>;
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
