import type { IntegrationCredentials } from '../domain/integrations.js';
import { GitHubAppProvider } from './github-provider.js';
import { GitProvider } from './git-provider.js';
import type { CodehostProvider, GitAuth } from './types.js';

/** What Berth keeps of a `git` integration in the clear. */
export interface GitSettings {
  repositories: string[];
  username: string | null;
  known_hosts: string | null;
}

/** What Berth keeps of a `github` integration in the clear. */
export interface GitHubSettings {
  app_id: number;
  installation_id: number;
  api_url: string | null;
}

export interface ProviderOptions {
  /** Where SSH host keys seen first are remembered. */
  knownHostsFile: string;
  /** Whether repositories on the Berth host itself may be used. */
  allowLocal: boolean;
  /** How long each git command asking a remote may take; without it, only the caller's signal bounds it. */
  gitTimeoutMs?: number;
}

/** The GitHub App of a stored `github` integration, to report to (commit statuses, deployments); none for `git`. */
export function gitHubAppOf(integration: {
  provider: 'git' | 'github';
  settings: Record<string, unknown>;
  credentials: IntegrationCredentials;
}): GitHubAppProvider | undefined {
  return integration.provider === 'github' ? (providerFor(integration, { knownHostsFile: '', allowLocal: false }) as GitHubAppProvider) : undefined;
}

/** The provider of a stored integration, with its decrypted credentials. */
export function providerFor(
  integration: { provider: 'git' | 'github'; settings: Record<string, unknown>; credentials: IntegrationCredentials },
  options: ProviderOptions,
): CodehostProvider {
  if (integration.provider === 'github') {
    const settings = integration.settings as unknown as GitHubSettings;
    const privateKey = integration.credentials.github?.privateKey;
    if (!privateKey) throw new Error('github integration without a private key');
    return new GitHubAppProvider({
      appId: settings.app_id,
      privateKey,
      installationId: settings.installation_id,
      ...(settings.api_url ? { apiBaseUrl: settings.api_url } : {}),
    });
  }
  const settings = integration.settings as unknown as GitSettings;
  const git = integration.credentials.git ?? {};
  const shared = sharedAuth(settings, git);
  return new GitProvider({
    repositories: settings.repositories.map((url) => {
      const own = git.perRepository?.[url];
      return own ? { url, auth: { kind: 'basic', ...own } } : url;
    }),
    auth: shared,
    knownHostsFile: options.knownHostsFile,
    allowLocal: options.allowLocal,
    timeoutMs: options.gitTimeoutMs,
  });
}

function sharedAuth(settings: GitSettings, git: NonNullable<IntegrationCredentials['git']>): GitAuth | undefined {
  if (git.sshPrivateKey) return { kind: 'ssh-key', privateKey: git.sshPrivateKey, ...(settings.known_hosts ? { knownHosts: settings.known_hosts } : {}) };
  if (git.password && settings.username) return { kind: 'basic', username: settings.username, password: git.password };
  return undefined;
}
