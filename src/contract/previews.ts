import { Type } from 'typebox';
import { DEFAULT_PREVIEW_SETTINGS } from '../domain/previews.js';
import { Nullable, OptionalNullable, StringEnum } from './common.js';

const d = DEFAULT_PREVIEW_SETTINGS;
const SecretName = Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' });

const fields = {
  enabled: Type.Boolean({ description: `Whether pull requests (github) or matching branches (git) get previews (default ${d.enabled}).` }),
  trigger: StringEnum(['all', 'label'] as const, { description: `\`all\` pull requests, or only those with \`label\` (default \`${d.trigger}\`).` }),
  label: Nullable(Type.String({ minLength: 1, maxLength: 256, description: "The label a pull request needs with trigger 'label'." })),
  idle_minutes: Type.Integer({
    minimum: 1,
    maximum: 525_600,
    description: `A preview with no new commit for this long is removed (default ${d.idle_minutes}).`,
  }),
  max_previews: Type.Integer({
    minimum: 1,
    maximum: 100,
    description: `Previews of this deployment at once; more are refused with a commit status (default ${d.max_previews}).`,
  }),
  secret_names: Type.Array(SecretName, { maxItems: 200, description: "The parent's secrets previews get, by name (default none)." }),
  branch_pattern: Nullable(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: '`git` integrations: branches that get a preview; `*` matches within a path segment, `**` across.',
    }),
  ),
  allow_forks: Type.Boolean({
    description:
      'Pull requests from forks get previews (never with secrets) when this is on and the operator set BERTH_PREVIEWS_ALLOW_FORKS=on (default false).',
  }),
};

/** As answered: every field, defaults filled in. */
export const PreviewSettingsView = Type.Object(fields, { title: 'PreviewSettings', description: 'Preview deployments of this deployment (docs/previews.md).' });

/** In a PATCH: given fields replace the current ones; `label` and `branch_pattern` are cleared with null. */
export const PreviewSettingsPatch = Type.Object(
  {
    enabled: OptionalNullable(fields.enabled),
    trigger: OptionalNullable(fields.trigger),
    label: Type.Optional(fields.label),
    idle_minutes: OptionalNullable(fields.idle_minutes),
    max_previews: OptionalNullable(fields.max_previews),
    secret_names: OptionalNullable(fields.secret_names),
    branch_pattern: Type.Optional(fields.branch_pattern),
    allow_forks: OptionalNullable(fields.allow_forks),
  },
  { title: 'PreviewSettingsUpdate', additionalProperties: false },
);

/** What a preview deployment was made for. */
export const PreviewOriginView = Type.Object(
  {
    kind: StringEnum(['pull_request', 'branch'] as const),
    pull_request_number: Nullable(Type.Integer({ description: 'The pull request (github integrations).' })),
    branch: Nullable(Type.String({ description: "The branch: the pull request's head branch, or the branch of a git integration." })),
    head_sha: Type.String({ description: 'The newest commit the preview was asked to build.' }),
    fork: Type.Boolean({ description: 'A pull request from a fork: the preview has no secrets.' }),
    last_activity_at: Type.String({ format: 'date-time', description: 'Its last new commit: idle removal counts from here.' }),
  },
  { title: 'PreviewOrigin' },
);
