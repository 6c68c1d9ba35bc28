import { randomUUID } from 'node:crypto';
import { entityTag, requireIfMatch } from '../domain/entity-tags.js';
import {
  type CodehostProvider,
  type CodehostRepository,
  CodehostError,
  type GitHubSettings,
  type GitSettings,
  providerFor,
  resolveRemote,
  sameRepository,
} from '../codehost/index.js';
import type { CreateIntegrationInput, InstallationView, IntegrationView, RepositoryView } from '../contract/integrations.js';
import { fail, invalidField, sourceConfigError } from '../domain/errors.js';
import {
  checkGitCredentials,
  derivedInstallationId,
  type IntegrationCredentials,
  integrationNotFound,
  requireProviderSettings,
} from '../domain/integrations.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import type { Encryptor } from '../security/encryption.js';
import { decryptCredentials, encryptCredentials } from '../security/integration-credentials.js';
import { type Db, type Executor, nowIso } from '../store/database.js';
import { countDeploymentsOfIntegration } from '../store/repositories/deployments.js';
import * as repo from '../store/repositories/integrations.js';
import { createRepositoryListings, ListingDeadlineError } from './repository-listings.js';

export interface CodehostOptions {
  /** Where SSH host keys seen first are remembered (`<data dir>/git/known_hosts`). */
  knownHostsFile: string;
  /** Whether repositories on the Berth host itself may be used (BERTH_GIT_ALLOW_LOCAL). */
  allowLocal: boolean;
  /** How long one git command asking a remote may take (BERTH_GIT_TIMEOUT_SECONDS); a whole listing, twice that. */
  gitTimeoutMs: number;
}

/** Listing asks every remote; a list is reused this long, so creating deployments does not ask again each time. */
const REPOSITORY_LIST_TTL_MS = 30_000;

type CreateGit = NonNullable<CreateIntegrationInput['git']>;
type CreateGitHub = NonNullable<CreateIntegrationInput['github']>;

export function createIntegrationService({ db, encryptor, codehost }: { db: Db; encryptor: Encryptor; codehost: CodehostOptions }) {
  const listings = createRepositoryListings<repo.IntegrationRecord>({
    list: async (integration, signal) => provider(integration).listRepositories({ signal }),
    ttlMs: REPOSITORY_LIST_TTL_MS,
    deadlineMs: 2 * codehost.gitTimeoutMs,
  });

  async function recordOrFail(executor: Executor, scope: WorkspaceScope, id: string) {
    const record = await repo.findIntegration(executor, scope.workspaceId, id);
    if (!record) throw integrationNotFound(id);
    return record;
  }

  function provider(record: repo.IntegrationRecord): CodehostProvider {
    return providerFor({ ...record, credentials: decryptCredentials(encryptor, record.id, record.credentials_encrypted) }, codehost);
  }

  async function repositoriesOf(record: repo.IntegrationRecord): Promise<CodehostRepository[]> {
    try {
      return await listings.repositories(record);
    } catch (error) {
      if (error instanceof ListingDeadlineError) {
        const cause = error.cause instanceof CodehostError ? ` (${error.cause.message})` : '';
        throw fail(
          'codehost_timeout',
          `Integration ID ${record.id}: the code host did not answer within ${error.deadlineMs / 1000} s${cause}. Try again later.`,
        );
      }
      if (error instanceof CodehostError && error.failure === 'timeout') throw fail('codehost_timeout', `Integration ID ${record.id}: ${error.message}`);
      if (error instanceof CodehostError) throw fail('codehost_failed', `Integration ID ${record.id}: ${error.message}`);
      throw error;
    }
  }

  return {
    async create(scope: WorkspaceScope, input: CreateIntegrationInput, webhookBase: string): Promise<IntegrationView> {
      const id = randomUUID();
      const now = nowIso();
      const { settings, credentials, installationId } =
        input.provider === 'git'
          ? gitIntegration(requireProviderSettings<CreateGit>('git', input), codehost, id)
          : githubIntegration(requireProviderSettings<CreateGitHub>('github', input));
      const record: repo.IntegrationRecord = {
        id,
        workspace_id: scope.workspaceId,
        provider: input.provider,
        name: input.name,
        installation_id: installationId,
        settings,
        credentials_encrypted: encryptCredentials(encryptor, id, credentials),
        created_at: now,
        updated_at: now,
      };
      await repo.insertIntegration(db, record);
      return integrationView(record, credentials, webhookBase);
    },

    async get(scope: WorkspaceScope, id: string, webhookBase: string): Promise<IntegrationView> {
      const record = await recordOrFail(db, scope, id);
      return integrationView(record, decryptCredentials(encryptor, record.id, record.credentials_encrypted), webhookBase);
    },

    async installations(scope: WorkspaceScope): Promise<InstallationView[]> {
      return (await repo.listIntegrations(db, scope.workspaceId)).map((r) => ({ id: r.id, installation_id: r.installation_id, name: r.name }));
    },

    async repositories(scope: WorkspaceScope, id: string): Promise<RepositoryView[]> {
      const record = await recordOrFail(db, scope, id);
      return (await repositoriesOf(record)).map((r) => ({
        host_integration_id: record.id,
        id: r.id,
        name: r.name,
        owner: r.owner,
        url: r.url,
        default_branch: r.defaultBranch,
      }));
    },

    /**
     * The repository a code-host deployment names, checked against the integration's
     * list: 404 for an integration not in the workspace, 400 for a URL it does not list.
     */
    async repositoryFor(scope: WorkspaceScope, integrationId: string, repoUrl: string): Promise<CodehostRepository> {
      const record = await recordOrFail(db, scope, integrationId);
      const repositories = await repositoriesOf(record);
      const found = repositories.find((r) => sameRepository(r.url, repoUrl));
      if (!found) {
        throw sourceConfigError(
          `repository '${safeUrl(repoUrl)}' is not one of integration ${integrationId}'s repositories; ` +
            `list them with GET /v1/integrations/codehost/${integrationId}/repos.`,
        );
      }
      return found;
    },

    /**
     * Refuses a repository URL git must not be given (a transport other than https, http,
     * ssh and git, local repositories unless allowed, option-like forms): a 422 at `loc`.
     */
    checkRepositoryUrl(url: string, loc: (string | number)[]): void {
      usableRemote(url, codehost, loc);
    },

    /**
     * With `condition`, only while the integration is as its `If-Match` tag says (its view
     * names the webhook URL at `webhookBase`). Integrations never change in place, so the
     * read in this transaction is the one the delete removes.
     */
    async delete(scope: WorkspaceScope, id: string, condition?: { ifMatch: string; webhookBase: string }): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const record = await recordOrFail(trx, scope, id);
        if (condition) {
          const view = integrationView(record, decryptCredentials(encryptor, record.id, record.credentials_encrypted), condition.webhookBase);
          requireIfMatch(condition.ifMatch, entityTag(view), `Integration ID ${id}`);
        }
        const using = await countDeploymentsOfIntegration(trx, id);
        if (using > 0) {
          throw fail(
            'integration_in_use',
            `Integration ID ${id} cannot be deleted: ${using} deployment${using === 1 ? ' builds' : 's build'} from it. Delete those deployments first.`,
          );
        }
        await repo.deleteIntegration(trx, scope.workspaceId, id);
      });
      listings.forget(id);
    },
  };
}

export type IntegrationService = ReturnType<typeof createIntegrationService>;

/** A URL as it may appear in an answer: without embedded credentials. */
function safeUrl(url: string): string {
  try {
    return resolveRemote(url, undefined).location.url;
  } catch {
    return '(an invalid URL)';
  }
}

/**
 * The URL parsed under the code-host settings, or a 422 naming the field. The URL is not
 * echoed: it may carry a password, and the message says what is wrong without it.
 */
function usableRemote(url: string, options: CodehostOptions, loc: (string | number)[]) {
  try {
    return resolveRemote(url, undefined, options);
  } catch (error) {
    if (!(error instanceof CodehostError)) throw error;
    throw invalidField({ type: 'value_error', loc, msg: `Value error, ${error.message}` });
  }
}

function gitIntegration(input: CreateGit, options: CodehostOptions, id: string) {
  checkGitCredentials(input);
  const repositories: string[] = [];
  const perRepository: Record<string, { username: string; password: string }> = {};
  input.repositories.forEach((url, index) => {
    const remote = usableRemote(url, options, ['body', 'git', 'repositories', index]);
    repositories.push(remote.location.url);
    if (remote.auth?.kind === 'basic') perRepository[remote.location.url] = { username: remote.auth.username, password: remote.auth.password };
  });
  const settings: GitSettings = { repositories, username: input.username ?? null, known_hosts: input.known_hosts ?? null };
  const credentials: IntegrationCredentials = {
    git: {
      ...(input.password ? { password: input.password } : {}),
      ...(input.ssh_private_key ? { sshPrivateKey: input.ssh_private_key } : {}),
      ...(Object.keys(perRepository).length > 0 ? { perRepository } : {}),
    },
  };
  return { settings: settings as unknown as Record<string, unknown>, credentials, installationId: derivedInstallationId(id) };
}

function githubIntegration(input: CreateGitHub) {
  const settings: GitHubSettings = { app_id: input.app_id, installation_id: input.installation_id, api_url: input.api_url ?? null };
  const credentials: IntegrationCredentials = {
    github: { privateKey: input.private_key, ...(input.webhook_secret ? { webhookSecret: input.webhook_secret } : {}) },
  };
  return { settings: settings as unknown as Record<string, unknown>, credentials, installationId: input.installation_id };
}

function integrationView(record: repo.IntegrationRecord, credentials: IntegrationCredentials, webhookBase: string): IntegrationView {
  const git = record.provider === 'git' ? (record.settings as unknown as GitSettings) : null;
  const github = record.provider === 'github' ? (record.settings as unknown as GitHubSettings) : null;
  return {
    id: record.id,
    provider: record.provider,
    name: record.name,
    installation_id: record.installation_id,
    webhook_url: `${webhookBase}/v1/integrations/codehost/${record.id}/webhook`,
    git: git && {
      repositories: git.repositories,
      username: git.username,
      has_password: Boolean(credentials.git?.password),
      has_ssh_private_key: Boolean(credentials.git?.sshPrivateKey),
      has_known_hosts: Boolean(git.known_hosts),
    },
    github: github && {
      app_id: github.app_id,
      installation_id: github.installation_id,
      api_url: github.api_url,
      has_webhook_secret: Boolean(credentials.github?.webhookSecret),
    },
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}
