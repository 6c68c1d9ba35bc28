import { fail, invalidField } from './errors.js';

export const integrationNotFound = (id: string) => fail('integration_not_found', `Integration ID ${id} not found.`);

/** What an integration keeps encrypted. */
export interface IntegrationCredentials {
  git?: {
    username?: string;
    password?: string;
    sshPrivateKey?: string;
    /** Credentials that came inside a repository URL, by the URL without them. */
    perRepository?: Record<string, { username: string; password: string }>;
  };
  github?: { privateKey: string; webhookSecret?: string };
}

/** The provider's settings block must come with its provider, and only it. */
export function requireProviderSettings<T>(provider: 'git' | 'github', given: { git?: unknown; github?: unknown }): T {
  const own = given[provider];
  const other = provider === 'git' ? 'github' : 'git';
  if (own == null) throw invalidField({ type: 'missing', loc: ['body', provider], msg: `Field required for provider '${provider}'`, input: null });
  if (given[other] != null) throw fail('integration_settings_invalid', `'${other}' settings do not apply to a '${provider}' integration; leave them out.`);
  return own as T;
}

/** The `git` provider authenticates over http(s) with a password or over ssh with a key, not both at once for all repositories. */
export function checkGitCredentials(settings: { username?: string | null; password?: string | null; ssh_private_key?: string | null }): void {
  if (settings.password != null && settings.username == null) {
    throw fail(
      'integration_settings_invalid',
      "A 'git' integration with a 'password' needs its 'username' too (for tokens, any non-empty name GitHub or GitLab accept, e.g. 'x-access-token').",
    );
  }
}

/**
 * `installation_id` of a `git` integration, which has no installation: a stable number
 * from its id, so clients that read it get the same value every time.
 */
export function derivedInstallationId(integrationId: string): number {
  return Number.parseInt(integrationId.replace(/-/g, '').slice(0, 12), 16);
}
