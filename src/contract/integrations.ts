import { Type, type Static } from 'typebox';
import { DateTime, Nullable, OptionalNullable, StringEnum, Uuid } from './common.js';

const Secret = (maxLength: number, description: string) =>
  Type.String({ minLength: 1, maxLength, description: `${description} Stored encrypted; never returned.` });

export const GitIntegrationSettings = Type.Object(
  {
    repositories: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
      minItems: 1,
      maxItems: 500,
      description:
        'Repository URLs: https://, http://, ssh://, user@host:path, file:// or an absolute path on the Berth host. ' +
        'Credentials written into an http(s) URL are taken out of it and kept encrypted.',
    }),
    username: OptionalNullable(Type.String({ minLength: 1, maxLength: 256, description: 'User name for http(s) repositories.' })),
    password: OptionalNullable(Secret(4096, 'Password or access token for http(s) repositories.')),
    ssh_private_key: OptionalNullable(Secret(16384, 'Unencrypted SSH private key (OpenSSH or PEM) for ssh repositories.')),
    known_hosts: OptionalNullable(
      Type.String({
        maxLength: 65536,
        description: "known_hosts lines that pin the SSH hosts' keys; without them the first key seen is trusted and remembered.",
      }),
    ),
  },
  { title: 'GitIntegrationSettings', description: 'Settings of a `git` integration.' },
);

export const GitHubIntegrationSettings = Type.Object(
  {
    app_id: Type.Integer({ minimum: 1, description: 'GitHub App id.' }),
    private_key: Secret(16384, "The GitHub App's private key (PEM)."),
    installation_id: Type.Integer({ minimum: 1, description: "Id of the App's installation on the account whose repositories are used." }),
    api_url: OptionalNullable(
      Type.String({
        maxLength: 2048,
        pattern: '^https?://',
        description: 'REST API base for GitHub Enterprise Server (https://HOST/api/v3); default https://api.github.com.',
      }),
    ),
    webhook_secret: OptionalNullable(Secret(1024, "Secret of the App's webhook, to verify X-Hub-Signature-256 on push deliveries.")),
  },
  { title: 'GitHubIntegrationSettings', description: 'Settings of a `github` integration: a GitHub App installation.' },
);

export const CODEHOST_PROVIDERS = ['git', 'github'] as const;

export const CreateIntegrationBody = Type.Object(
  {
    provider: StringEnum(CODEHOST_PROVIDERS, { description: 'Where the repositories are: `git` (any git remote) or `github` (a GitHub App installation).' }),
    name: Type.String({ minLength: 1, maxLength: 100, description: 'A name to tell integrations apart.' }),
    git: OptionalNullable(GitIntegrationSettings),
    github: OptionalNullable(GitHubIntegrationSettings),
  },
  { title: 'IntegrationCreate' },
);
export type CreateIntegrationInput = Static<typeof CreateIntegrationBody>;

export const Integration = Type.Object(
  {
    id: Uuid(),
    provider: StringEnum(CODEHOST_PROVIDERS),
    name: Type.String(),
    installation_id: Type.Integer({ description: "GitHub's installation id; for `git`, a stable number derived from the integration." }),
    webhook_url: Type.String({ description: 'Where the code host sends push events (GitHub App webhook URL).' }),
    git: Nullable(
      Type.Object({
        repositories: Type.Array(Type.String()),
        username: Nullable(Type.String()),
        has_password: Type.Boolean(),
        has_ssh_private_key: Type.Boolean(),
        has_known_hosts: Type.Boolean(),
      }),
    ),
    github: Nullable(
      Type.Object({ app_id: Type.Integer(), installation_id: Type.Integer(), api_url: Nullable(Type.String()), has_webhook_secret: Type.Boolean() }),
    ),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Integration', description: 'A code-host integration of the workspace. Credentials are never returned.' },
);
export type IntegrationView = Static<typeof Integration>;

/** An item of `GET /v1/integrations/codehost/install`. */
export const Installation = Type.Object({ id: Uuid(), installation_id: Type.Integer(), name: Type.String() }, { title: 'Installation' });
export const Installations = Type.Array(Installation);
export type InstallationView = Static<typeof Installation>;

/** An item of `GET /v1/integrations/codehost/{integration_id}/repos`. */
export const Repository = Type.Object(
  {
    host_integration_id: Uuid({ description: 'Use as `source_config.integration_id`.' }),
    id: Type.Integer({ description: 'Stable for the repository.' }),
    name: Type.String(),
    owner: Type.String(),
    url: Type.String({ description: 'Use as `source_config.repo_url`.' }),
    default_branch: Type.String({ description: 'Use as `source_revision_config.repo_ref`.' }),
  },
  { title: 'Repository' },
);
export const Repositories = Type.Array(Repository);
export type RepositoryView = Static<typeof Repository>;

export const IntegrationParams = Type.Object({ integration_id: Uuid({ description: 'Id of the integration.' }) });
