import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { CodehostError } from './errors.js';
import type { CodehostProvider, CodehostRepository, GitAuth, ListOptions } from './types.js';
import { parseRepositoryUrl } from './url.js';

export interface GitHubAppConfig {
  appId: number | string;
  /** The app's private key as GitHub hands it out (PEM, PKCS#1 or PKCS#8). */
  privateKey: string;
  installationId: number;
  /**
   * REST API base: `https://api.github.com` unless GitHub Enterprise Server
   * (`https://HOST/api/v3`) or a test stand-in.
   */
  apiBaseUrl?: string;
  /** Bound on each API request; 30 s unless given. */
  requestTimeoutMs?: number;
}

/** A repository on GitHub, as the REST API names it. */
export interface RepositoryName {
  owner: string;
  repo: string;
}

export interface InstallationToken {
  token: string;
  expiresAt: Date;
}

/** A token is renewed this long before GitHub says it expires, so a clone never starts with a dying one. */
const RENEW_BEFORE_MS = 5 * 60 * 1000;
const DEFAULT_API = 'https://api.github.com';
const ignore = () => undefined;
const SILENT = { debug: ignore, info: ignore, warn: ignore, error: ignore };

/**
 * The `github` integration: one GitHub App installation, through `@octokit/rest` 22 and
 * `@octokit/auth-app` 8 (both support Node 20). The app's JWT only ever buys installation
 * tokens; those list repositories and clone over https as `x-access-token:<token>`.
 */
export class GitHubAppProvider implements CodehostProvider {
  readonly kind = 'github';
  private readonly apiBaseUrl: string;
  private readonly api: Octokit;
  private readonly appAuth: ReturnType<typeof createAppAuth>;
  /** The one host (with port) that may receive the installation token when cloning. */
  private readonly cloneHost: string;
  private cached: InstallationToken | undefined;
  private pending: Promise<InstallationToken> | undefined;

  constructor(
    private readonly config: GitHubAppConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.apiBaseUrl = (config.apiBaseUrl ?? DEFAULT_API).replace(/\/+$/, '');
    this.api = this.client(undefined);
    this.appAuth = createAppAuth({
      appId: config.appId,
      privateKey: config.privateKey,
      installationId: config.installationId,
      request: this.api.request,
      log: SILENT,
    });
    this.cloneHost = webHost(this.apiBaseUrl);
  }

  /**
   * An installation access token, reused until five minutes before it expires; callers at
   * the same moment share one request.
   */
  async installationToken(): Promise<InstallationToken> {
    if (this.cached && this.cached.expiresAt.getTime() - RENEW_BEFORE_MS > this.now()) return this.cached;
    this.pending ??= this.requestToken().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The installation's repositories, every page (GET /installation/repositories). */
  async listRepositories(options: ListOptions = {}): Promise<CodehostRepository[]> {
    try {
      return await this.fetchRepositories(options);
    } catch (error) {
      // A token revoked before its time: get a new one and try once more.
      if (statusOf(error) !== 401) throw this.apiFailure(error, 'listing the repositories of');
      this.cached = undefined;
      return this.fetchRepositories(options).catch((retryError: unknown) => {
        throw this.apiFailure(retryError, 'listing the repositories of');
      });
    }
  }

  /** Basic credentials for https clones from this GitHub; none for any other host. */
  async cloneAuth(url: string): Promise<GitAuth | undefined> {
    let host: string;
    try {
      const location = parseRepositoryUrl(url);
      if (location.transport !== 'https' && location.transport !== 'http') return undefined;
      host = hostWithPort(location.host as string, location.port);
    } catch {
      return undefined;
    }
    if (host !== this.cloneHost) return undefined;
    const { token } = await this.installationToken();
    return { kind: 'basic', username: 'x-access-token', password: token };
  }

  /**
   * A commit status (POST /repos/{owner}/{repo}/statuses/{sha}). GitHub keeps every one it is
   * sent and shows the latest per context.
   */
  async createCommitStatus(
    repository: RepositoryName,
    sha: string,
    status: { state: 'pending' | 'success' | 'failure' | 'error'; context: string; description: string; targetUrl?: string },
  ): Promise<void> {
    await this.withToken('posting a commit status through', (client) =>
      client.rest.repos.createCommitStatus({
        ...repository,
        sha,
        state: status.state,
        context: status.context,
        description: status.description,
        ...(status.targetUrl ? { target_url: status.targetUrl } : {}),
      }),
    );
  }

  /**
   * A GitHub deployment of `sha` to `environment` (POST /repos/{owner}/{repo}/deployments):
   * Berth deploys, so GitHub is asked neither to merge the default branch in nor to wait
   * for other checks. Its id.
   */
  async createDeployment(repository: RepositoryName, sha: string, environment: string, description: string): Promise<number> {
    const response = await this.withToken('creating a GitHub deployment through', (client) =>
      client.rest.repos.createDeployment({
        ...repository,
        ref: sha,
        environment,
        description,
        auto_merge: false,
        required_contexts: [],
        transient_environment: false,
      }),
    );
    const body = response.data as { id?: unknown; message?: string };
    // 202 is GitHub's answer when it merged instead of deploying; with auto_merge off it means a refusal.
    if (typeof body.id !== 'number')
      throw new CodehostError('provider', `github: no deployment was created (HTTP ${response.status}: ${body.message ?? 'no id'})`);
    return body.id;
  }

  /** A GitHub deployment's status (POST /repos/{owner}/{repo}/deployments/{id}/statuses). */
  async createDeploymentStatus(
    repository: RepositoryName,
    deploymentId: number,
    status: { state: 'queued' | 'in_progress' | 'success' | 'failure' | 'error'; description: string; logUrl?: string; environmentUrl?: string },
  ): Promise<void> {
    await this.withToken('posting a deployment status through', (client) =>
      client.rest.repos.createDeploymentStatus({
        ...repository,
        deployment_id: deploymentId,
        state: status.state,
        description: status.description,
        ...(status.logUrl ? { log_url: status.logUrl } : {}),
        ...(status.environmentUrl ? { environment_url: status.environmentUrl } : {}),
        auto_inactive: true,
      }),
    );
  }

  /** One call with an installation token; a token revoked before its time is renewed and the call made once more. */
  private async withToken<T>(activity: string, call: (client: Octokit) => Promise<T>): Promise<T> {
    const once = async () => call(this.client((await this.installationToken()).token));
    try {
      return await once();
    } catch (error) {
      if (statusOf(error) !== 401) throw this.apiFailure(error, activity);
      this.cached = undefined;
      return once().catch((retryError: unknown) => {
        throw this.apiFailure(retryError, activity);
      });
    }
  }

  private async fetchRepositories(options: ListOptions): Promise<CodehostRepository[]> {
    const { token } = await this.installationToken();
    const client = this.client(token);
    const repositories = await client.paginate(client.rest.apps.listReposAccessibleToInstallation, { per_page: 100, request: { signal: options.signal } });
    return repositories.map((repository) => ({
      id: repository.id,
      owner: repository.owner.login,
      name: repository.name,
      url: repository.html_url,
      cloneUrl: repository.clone_url,
      defaultBranch: repository.default_branch,
    }));
  }

  /**
   * Octokit's own request log is off: it would print every failed call to the console;
   * failures reach Berth's log as the CodehostErrors thrown here.
   */
  private client(token: string | undefined): Octokit {
    return new Octokit({
      ...(token ? { auth: token } : {}),
      baseUrl: this.apiBaseUrl,
      userAgent: 'berth',
      log: SILENT,
      request: { fetch: timedFetch(this.config.requestTimeoutMs ?? 30_000) },
    });
  }

  private async requestToken(): Promise<InstallationToken> {
    try {
      // `refresh` skips auth-app's own cache, which keeps tokens 59 minutes whatever their expiry says.
      const result = await this.appAuth({ type: 'installation', refresh: true });
      const token = { token: result.token, expiresAt: new Date(result.expiresAt) };
      this.cached = token;
      return token;
    } catch (error) {
      throw this.apiFailure(error, 'getting an access token for');
    }
  }

  /** Never quotes a token or JWT: only GitHub's status and message, and what was being done. */
  private apiFailure(error: unknown, activity: string): CodehostError {
    if (error instanceof CodehostError) return error;
    const what = `${activity} installation ${this.config.installationId} of GitHub App ${this.config.appId}`;
    const status = statusOf(error);
    const hasResponse = typeof error === 'object' && error !== null && 'response' in error && (error as { response?: unknown }).response !== undefined;
    const detail = error instanceof Error ? error.message.replace(/ - https?:\/\/\S+$/, '').slice(0, 300) : String(error);
    if ((error as { name?: string })?.name === 'AbortError') return new CodehostError('aborted', `github: aborted while ${what}`);
    if (status === undefined || !hasResponse) return new CodehostError('unreachable', `github: cannot reach ${this.apiBaseUrl} while ${what}: ${detail}`);
    if (status === 401)
      return new CodehostError(
        'auth-failed',
        `github: GitHub refused the app's credentials while ${what} (HTTP 401: ${detail}): check the app id and private key`,
      );
    if (status === 404)
      return new CodehostError('provider', `github: ${what} failed (HTTP 404: ${detail}): check the installation id and that the app is still installed`);
    return new CodehostError('provider', `github: ${what} failed (HTTP ${status}: ${detail})`);
  }
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

/** github.com for api.github.com; the API's own host for GitHub Enterprise Server and stand-ins. */
function webHost(apiBaseUrl: string): string {
  const api = new URL(apiBaseUrl);
  const port = api.port === '' ? null : Number(api.port);
  return api.hostname === 'api.github.com' ? 'github.com' : hostWithPort(api.hostname, port);
}

function hostWithPort(host: string, port: number | null): string {
  return port === null ? host.toLowerCase() : `${host.toLowerCase()}:${port}`;
}

/** Bounds every API request, whether or not the caller passed a signal of its own. */
function timedFetch(timeoutMs: number): typeof fetch {
  return (input, init) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
  };
}
