import { type Static, Type } from 'typebox';
import { Nullable, StringEnum, Uuid } from './common.js';

const ROLE_DESCRIPTION =
  '`admin`: everything, organization administration included; `member`: everything in its workspaces but administration; ' +
  '`read_only`: reads only (event streams and logs included); `deployer`: only the deployments in `deployment_ids`, and there ' +
  'reads, new revisions without secrets or configuration, redeploys and interruptions; `runner`: only the build runner routes ' +
  "(/v1/runner, docs/build-runners.md), for the organization's builds.";
const Role = (options: { default?: 'member' } = {}) =>
  StringEnum(['admin', 'member', 'read_only', 'deployer', 'runner'], { ...options, description: ROLE_DESCRIPTION });
/** Keys as listed: `listener` keys reach only the listener protocol of their listener. */
const AnyRole = StringEnum(['admin', 'member', 'read_only', 'deployer', 'listener', 'runner'], { description: ROLE_DESCRIPTION });

/** A runner label: what a build may require of the runner that builds it. */
export const RunnerLabel = Type.String({ minLength: 1, maxLength: 63, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' });
const RunnerLabels = (description: string) => Type.Array(RunnerLabel, { maxItems: 20, uniqueItems: true, description });

/** The most deployments one deployer key may list. */
export const MAX_DEPLOYER_DEPLOYMENTS = 100;

export const Workspace = Type.Object(
  { id: Uuid(), organization_id: Uuid(), name: Type.String(), created_at: Type.String({ format: 'date-time' }) },
  { title: 'Workspace' },
);

/**
 * Placement of builds (docs/build-runners.md): a build is claimed only by a runner that
 * advertises every label its workspace requires and every label the listener its
 * deployment runs on requires.
 */
export const RunnerLabelRequirement = Type.Object(
  { labels: RunnerLabels('Labels a runner must advertise, all of them, to take these builds; empty: any runner of the organization.') },
  { title: 'RunnerLabelRequirement' },
);

/** The body of a PUT: without `labels`, the requirement is lifted. */
export const RunnerLabelRequirementBody = Type.Object(
  {
    labels: Type.Optional(RunnerLabels('Labels a runner must advertise, all of them, to take these builds; empty or absent: any runner of the organization.')),
  },
  { title: 'RunnerLabelRequirementUpdate' },
);

export const WorkspaceParams = Type.Object({ workspace_id: Uuid({ description: 'Id of the workspace.' }) });

export const WorkspaceCreate = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { title: 'WorkspaceCreate' });

export const ApiKey = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    role: AnyRole,
    organization_id: Uuid(),
    workspace_id: Nullable(Uuid()),
    listener_id: Type.Optional(Nullable(Uuid({ description: 'For `listener` keys: the listener the key speaks for.' }))),
    deployment_ids: Type.Array(Uuid(), { description: 'For `deployer` keys: the deployments the key may act on; empty for other roles.' }),
    labels: Type.Optional(RunnerLabels('For `runner` keys: the labels its runners may advertise.')),
    key_hint: Type.String({ description: 'First and last characters of the key, to tell keys apart.' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'ApiKey' },
);

/** The answer to creating a key: the only time the key itself is shown. */
export const CreatedApiKey = Type.Object({ ...ApiKey.properties, key: Type.String() }, { title: 'CreatedApiKey' });

export const ApiKeyCreate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    workspace_id: Type.Optional(Nullable(Uuid({ description: 'Bind the key to this workspace.' }))),
    role: Type.Optional(Role({ default: 'member' })),
    deployment_ids: Type.Optional(
      Type.Array(Uuid(), {
        minItems: 1,
        maxItems: MAX_DEPLOYER_DEPLOYMENTS,
        uniqueItems: true,
        description: 'Required for a `deployer` key (which must be bound to a workspace) and only for it: deployments of that workspace.',
      }),
    ),
    labels: Type.Optional(RunnerLabels('Only for a `runner` key (organization-wide, not bound to a workspace): the labels its runners may advertise.')),
    listener_id: Type.Optional(
      Nullable(
        Uuid({
          description:
            'Make a `listener` key for this listener (a new key beside its others; revoke the old one to rotate). It reaches only the listener protocol (docs/listener-protocol.md); `role` is ignored.',
        }),
      ),
    ),
  },
  { title: 'ApiKeyCreate' },
);

export const ApiKeyParams = Type.Object({ key_id: Uuid() });

export type WorkspaceView = Static<typeof Workspace>;
export type ApiKeyView = Static<typeof ApiKey>;
export type CreatedApiKeyView = Static<typeof CreatedApiKey>;
export type NewApiKey = Static<typeof ApiKeyCreate>;

export type RunnerLabelRequirementView = Static<typeof RunnerLabelRequirement>;
export type RunnerLabelRequirementInput = Static<typeof RunnerLabelRequirementBody>;
