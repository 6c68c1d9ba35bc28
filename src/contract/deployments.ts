import { type Static, Type } from 'typebox';
import { DEPLOYMENT_STATUSES, DEPLOYMENT_TYPES } from '../domain/deployment-status.js';
import { SOURCE_SPELLINGS } from '../domain/deployment-config.js';
import { REVISION_STATUSES } from '../domain/revision-status.js';
import { AnyObject, DateTime, Nullable, OptionalNullable, PaginationQuery, StringEnum, Uuid } from './common.js';
import { PreviewOriginView, PreviewSettingsPatch, PreviewSettingsView } from './previews.js';

const Text = (maxLength: number, description?: string) => Type.String({ minLength: 1, maxLength, ...(description ? { description } : {}) });

export const Secret = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Environment variable name.' }),
    value: Type.String({ maxLength: 65536 }),
  },
  { title: 'Secret' },
);

/** A secret as answered: to a dashboard session never with its value. */
const SecretView = Type.Object(
  {
    name: Type.String({ description: 'Environment variable name.' }),
    value: Nullable(
      Type.String({
        description: 'The value, answered to API keys; null in answers to a dashboard session, which never receives secret values.',
      }),
    ),
  },
  { title: 'SecretView' },
);

const StepTimeout = (step: string, defaultSeconds: number) =>
  Type.Integer({
    minimum: 1,
    maximum: 86400,
    description: `Berth extension: seconds the ${step} step may take before the revision fails (default ${defaultSeconds}).`,
  });

const Quantity = () => OptionalNullable(Type.Number({ minimum: 0 }));
const ObjectList = (maxItems: number) => OptionalNullable(Type.Array(AnyObject(), { maxItems }));
/** Labels and annotations: more than any pod carries, few enough to keep a spec small. */
const StringMap = () => OptionalNullable(Type.Record(Type.String(), Type.String(), { maxProperties: 256 }));

// prettier-ignore
const QUANTITIES = [
  'min_scale', 'max_scale', 'cpu', 'cpu_limit', 'memory_mb', 'memory_limit_mb',
  'queue_min_scale', 'queue_max_scale', 'queue_cpu', 'queue_cpu_limit', 'queue_memory_mb', 'queue_memory_limit_mb',
  'orchestrator_cpu', 'orchestrator_cpu_limit', 'orchestrator_memory_mb', 'orchestrator_memory_limit_mb',
  'orchestrator_min_scale', 'orchestrator_max_scale', 'redis_memory_mb',
  'db_cpu', 'db_cpu_limit', 'db_memory_mb', 'db_memory_limit_mb', 'db_storage_gi', 'db_max_connections',
] as const;

/** Known fields are typed; unknown ones (e.g. newer `executor_*` fields) are kept as given. */
export const ResourceSpec = Type.Object(
  {
    ...(Object.fromEntries(QUANTITIES.map((field) => [field, Quantity()])) as Record<(typeof QUANTITIES)[number], ReturnType<typeof Quantity>>),
    labels: StringMap(),
    annotations: StringMap(),
    service_account_name: OptionalNullable(Type.String({ maxLength: 253 })),
    image_pull_secrets: OptionalNullable(Type.Array(Type.Object({ name: Type.String() }), { maxItems: 20 })),
    volumes: ObjectList(100),
    volume_mounts: ObjectList(100),
    init_containers: ObjectList(20),
    sidecars: ObjectList(20),
  },
  {
    title: 'ResourceSpec',
    additionalProperties: true,
    description:
      'Compute resources. Missing scale and size fields default to min_scale 1, max_scale 1, cpu 1, memory_mb 2048. ' +
      'At most 256 labels and 256 annotations, 100 volumes and volume mounts, 20 init containers, sidecars and image pull secrets.',
  },
);

export const SourceConfigInput = Type.Object(
  {
    integration_id: OptionalNullable(Uuid({ description: 'Code-host integration id (code-host deployments).' })),
    repo_url: OptionalNullable(Text(2048, 'Repository URL (code-host deployments).')),
    deployment_type: OptionalNullable(StringEnum(DEPLOYMENT_TYPES, { description: 'Defaults to prod.' })),
    build_on_push: OptionalNullable(Type.Boolean()),
    custom_url: OptionalNullable(Type.String({ maxLength: 2048 })),
    resource_spec: OptionalNullable(ResourceSpec),
    listener_id: OptionalNullable(Uuid({ description: 'Listener that runs the deployment.' })),
    listener_config: OptionalNullable(Type.Object({ k8s_namespace: OptionalNullable(Text(63)) })),
    install_command: OptionalNullable(Type.String({ maxLength: 4096 })),
    build_command: OptionalNullable(Type.String({ maxLength: 4096 })),
    build_timeout_seconds: OptionalNullable(StepTimeout('build', 900)),
    deploy_timeout_seconds: OptionalNullable(StepTimeout('deploy', 300)),
  },
  { title: 'SourceConfigInput' },
);

export const RevisionConfigInput = Type.Object(
  {
    repo_ref: OptionalNullable(
      Text(512, 'Branch or tag to build, or a full commit sha (code-host deployments); a name `git check-ref-format` accepts, not starting with `-`.'),
    ),
    graph_config_path: OptionalNullable(
      Text(1024, 'Path of the graph configuration file relative to the repository root, without `..`; defaults to langgraph.json.'),
    ),
    langgraph_config_path: OptionalNullable(Text(1024, 'Alias of graph_config_path.')),
    image_uri: OptionalNullable(Text(2048, 'Container image reference (external_docker and internal_docker deployments).')),
    source_tarball_path: OptionalNullable(
      Text(1024, 'internal_source deployments: the `object_path` answered by POST /v2/deployments/{id}/upload-url, whose archive was uploaded.'),
    ),
  },
  { title: 'SourceRevisionConfigInput' },
);

const TrackedPackages = OptionalNullable(Type.Array(Text(512), { maxItems: 200 }));
const Secrets = Type.Array(Secret, { maxItems: 200 });

export const CreateDeploymentBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: '^[A-Za-z][A-Za-z0-9-]*$',
      description: 'Unique in the workspace; starts with a letter; letters, digits and hyphens.',
    }),
    source: StringEnum(SOURCE_SPELLINGS, {
      description:
        "`codehost` (`github` is an alias) or `external_docker`; and as the LangGraph CLI sends them, `internal_source` (an uploaded project Berth builds) or `internal_docker` (an image pushed to Berth's registry).",
    }),
    source_config: Nullable(SourceConfigInput),
    source_revision_config: Nullable(RevisionConfigInput),
    secrets: Secrets,
    image_version: OptionalNullable(Text(256)),
  },
  { title: 'DeploymentCreate' },
);

export const PatchDeploymentBody = Type.Object(
  {
    name: OptionalNullable(Type.String({ description: 'Cannot change; accepted when equal to the current name.' })),
    source: OptionalNullable(Type.String({ description: 'Cannot change; accepted when equal to the current source.' })),
    display_name: OptionalNullable(Type.String({ minLength: 1, maxLength: 256 })),
    image_version: OptionalNullable(Text(256)),
    source_config: OptionalNullable(SourceConfigInput),
    source_revision_config: OptionalNullable(RevisionConfigInput),
    secrets: OptionalNullable(Secrets),
    tracked_packages: TrackedPackages,
    revision_source: OptionalNullable(Type.String()),
    previews: OptionalNullable(PreviewSettingsPatch),
  },
  { title: 'DeploymentUpdate' },
);

export const MergeSecretsBody = Type.Object(
  {
    set: Type.Optional(Type.Array(Secret, { maxItems: 200, description: 'Secrets to add, or to replace by name; the others are kept with their values.' })),
    remove: Type.Optional(
      Type.Array(Secret.properties.name, { maxItems: 200, description: 'Names to remove; a name the deployment does not have is already removed.' }),
    ),
  },
  { title: 'SecretsMerge', additionalProperties: false },
);

export const CreateRevisionBody = Type.Object(
  {
    source_revision_config: OptionalNullable(RevisionConfigInput),
    source_config: OptionalNullable(
      Type.Object({
        resource_spec: OptionalNullable(ResourceSpec),
        install_command: OptionalNullable(Type.String({ maxLength: 4096 })),
        build_command: OptionalNullable(Type.String({ maxLength: 4096 })),
      }),
    ),
    secrets: OptionalNullable(Secrets),
    tracked_packages: TrackedPackages,
  },
  { title: 'RevisionCreate' },
);

const RevisionConfig = Type.Object(
  {
    repo_ref: Nullable(Type.String()),
    graph_config_path: Nullable(Type.String()),
    langgraph_config_path: Nullable(Type.String({ description: 'Same value as graph_config_path.' })),
    image_uri: Nullable(Type.String()),
    repo_commit_sha: Nullable(
      Type.String({ description: 'Read-only: the commit the revision was built from; for a build on push not built yet, the pushed commit.' }),
    ),
    tracked_packages: Nullable(Type.Array(Type.String())),
    source_tarball_path: Nullable(Type.String({ description: 'internal_source: the uploaded archive the revision is built from.' })),
  },
  { title: 'SourceRevisionConfig' },
);

export const Deployment = Type.Object(
  {
    id: Uuid(),
    tenant_id: Uuid({ description: 'Workspace id.' }),
    name: Type.String(),
    display_name: Nullable(Type.String()),
    source: StringEnum(SOURCE_SPELLINGS, { description: 'As given at creation.' }),
    source_config: Type.Object(
      {
        integration_id: Nullable(Type.String()),
        repo_url: Nullable(Type.String()),
        deployment_type: Type.String(),
        build_on_push: Nullable(Type.Boolean()),
        custom_url: Nullable(Type.String()),
        resource_spec: Nullable(ResourceSpec),
        listener_id: Nullable(Type.String()),
        listener_config: Nullable(Type.Object({ k8s_namespace: Type.String() })),
        install_command: Nullable(Type.String()),
        build_command: Nullable(Type.String()),
        build_timeout_seconds: Nullable(Type.Integer()),
        deploy_timeout_seconds: Nullable(Type.Integer()),
      },
      { title: 'SourceConfig' },
    ),
    url: Nullable(Type.String({ description: 'Read-only: where the active revision serves.' })),
    source_revision_config: RevisionConfig,
    secrets: Type.Array(SecretView),
    status: StringEnum(DEPLOYMENT_STATUSES),
    latest_revision_id: Nullable(Uuid()),
    active_revision_id: Nullable(Uuid()),
    pinned_revision_id: Nullable(
      Uuid({
        description:
          'Set by a rollback (a redeploy of a revision that is not the latest): the revision the redeploy made, which the deployment holds to. ' +
          'While set, build on push makes no revision (each ignored push is a `push_ignored_pinned` event). POST …/unpin, or any new explicit revision, clears it.',
      }),
    ),
    pinned_at: Nullable(DateTime('Since when the deployment is pinned; null when it is not.')),
    image_version: Nullable(Type.String()),
    remote_reconciled: Type.Boolean(),
    previews: PreviewSettingsView,
    parent_deployment_id: Nullable(Uuid({ description: 'Set on a preview deployment: the deployment it previews.' })),
    preview: Nullable(PreviewOriginView),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Deployment' },
);

const BuildInputs = Type.Object(
  {
    key: Type.String({ description: 'SHA-256 of the workspace and the inputs below: revisions with the same key share one image.' }),
    source: Type.String({ description: '`commit:<sha>` for a repository, `archive:sha256:<hex>` for an uploaded archive.' }),
    commit_sha: Nullable(Type.String({ description: 'The commit built (repository sources).' })),
    graph_config_path: Type.String(),
    graph_config_sha256: Type.String({ description: 'SHA-256 of langgraph.json as read.' }),
    install_command: Nullable(Type.String()),
    build_command: Nullable(Type.String()),
    base_image: Type.String({ description: 'The image in FROM.' }),
    base_image_digest: Type.String({ description: "The base image's id where builds read it." }),
    generator_version: Type.Integer({ description: "Version of Berth's Dockerfile generator." }),
    reused_from_revision_id: Nullable(
      Uuid({ description: 'Set when this revision built nothing: the revision (of this workspace) whose image, built from the same inputs, it runs.' }),
    ),
  },
  {
    title: 'BuildInputs',
    description:
      "What the revision's image is built from. A revision whose inputs equal those of an earlier one of the same workspace whose image still exists skips fetching and building; secrets, resource_spec and display_name are not inputs.",
  },
);

export const Revision = Type.Object(
  {
    id: Uuid(),
    deployment_id: Uuid(),
    revision_number: Type.Integer({ description: '1 for the first revision of the deployment, then 2, 3, …' }),
    status: StringEnum(REVISION_STATUSES),
    status_message: Nullable(Type.String({ description: 'Why the revision is in its status, when there is something to say.' })),
    source: StringEnum(SOURCE_SPELLINGS),
    source_revision_config: RevisionConfig,
    resource_spec: Nullable(ResourceSpec),
    url: Nullable(Type.String({ description: 'Where this revision served once it was DEPLOYED.' })),
    remote_reconciled: Type.Boolean(),
    build_inputs: Nullable(BuildInputs),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Revision' },
);

export const DeploymentParams = Type.Object({ deployment_id: Uuid() });
export const RevisionParams = Type.Object({ deployment_id: Uuid(), revision_id: Uuid() });

export const DeploymentListQuery = Type.Object({
  ...PaginationQuery,
  name_contains: Type.Optional(Type.String({ maxLength: 256, description: 'Case-insensitive substring of the name.' })),
  name: Type.Optional(Type.String({ maxLength: 256, description: 'Exact name.' })),
  status: Type.Optional(Type.String({ description: `Comma-separated: ${DEPLOYMENT_STATUSES.join(', ')}.` })),
  remote_reconciled: Type.Optional(Type.Boolean()),
  tag_value_ids: Type.Optional(Type.String({ description: 'Comma-separated tag value ids. Berth has no tags yet, so a non-empty list matches nothing.' })),
  image_version: Type.Optional(Type.String({ maxLength: 256 })),
  deployment_type: Type.Optional(StringEnum(DEPLOYMENT_TYPES)),
  deployment_ids: Type.Optional(Type.String({ description: 'Comma-separated deployment ids.' })),
  parent_deployment_id: Type.Optional(Uuid({ description: 'Previews of this deployment only.' })),
  is_preview: Type.Optional(Type.Boolean({ description: 'true: previews only; false: no previews.' })),
});

export const RevisionListQuery = Type.Object({
  ...PaginationQuery,
  status: Type.Optional(Type.String({ description: `Comma-separated: ${REVISION_STATUSES.join(', ')}.` })),
  remote_reconciled: Type.Optional(Type.Boolean()),
});

export const RevisionWaitQuery = Type.Object({
  wait_for_terminal: Type.Optional(Type.Number({ minimum: 0, maximum: 300, description: 'Seconds to wait at most (0..300).' })),
});

export type CreateDeploymentInput = Static<typeof CreateDeploymentBody>;
export type PatchDeploymentInput = Static<typeof PatchDeploymentBody>;
export type MergeSecretsInput = Static<typeof MergeSecretsBody>;
export type CreateRevisionInput = Static<typeof CreateRevisionBody>;
export type DeploymentView = Static<typeof Deployment>;
export type RevisionView = Static<typeof Revision>;
/** `source_revision_config` as answered: both spellings of the config path (real-clients.md 1.1). */
export type RevisionConfigView = DeploymentView['source_revision_config'];
