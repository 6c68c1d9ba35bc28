import {
  canonicalSource,
  completeResourceSpec,
  completeRevisionConfig,
  givenRevisionFields,
  type ResourceSpec,
  type RevisionConfig,
  type RevisionConfigInput,
  type Source,
  type SourceConfig,
  type SourceConfigInput,
  sameJson,
} from './deployment-config.js';
import { fail } from './errors.js';
import type { PreviewSettingsInput } from './previews.js';
import { type Secret, sameSecrets, validateSecrets } from './secrets.js';

/** What a deployment is now: its settings and its latest revision's configuration. */
export interface DeploymentState {
  name: string;
  source: Source;
  sourceConfig: SourceConfig;
  revisionConfig: RevisionConfig;
  resourceSpec: ResourceSpec;
  secrets: Secret[];
  /** The image the latest revision was built into, if any. */
  latestImage: string | null;
}

export interface PatchInput {
  name?: string | null;
  source?: string | null;
  display_name?: string | null;
  image_version?: string | null;
  source_config?: SourceConfigInput | null;
  source_revision_config?: RevisionConfigInput | null;
  secrets?: Secret[] | null;
  tracked_packages?: string[] | null;
  revision_source?: string | null;
  /** In place, never a revision: services/deployments.ts merges it (domain/previews.ts). */
  previews?: PreviewSettingsInput | null;
}

export interface RevisionPlan {
  config: RevisionConfig;
  resourceSpec: ResourceSpec;
  secrets: Secret[];
  /** An image built before (rollback): the revision deploys it without building. */
  imageRef?: string | null;
}

export interface PatchPlan {
  sourceConfig: SourceConfig;
  displayName: string | undefined;
  imageVersion: string | undefined;
  /** Set exactly when the PATCH needs a new revision. */
  revision: RevisionPlan | null;
}

const FIXED_SOURCE_CONFIG = ['integration_id', 'repo_url', 'deployment_type', 'listener_id'] as const;
const IN_PLACE_SOURCE_CONFIG = ['build_on_push', 'custom_url', 'install_command', 'build_command', 'build_timeout_seconds', 'deploy_timeout_seconds'] as const;

/**
 * Decides what a PATCH changes. Nulls mean "leave as is", and resending a fixed field
 * with its current value is not a change (clients resend most of the create body).
 * A new revision is made when the body sets any revision field, changes the secrets
 * (`[]` counts as omitted) or changes the resource spec; everything else is in place.
 */
export function planPatch(current: DeploymentState, patch: PatchInput): PatchPlan {
  if (patch.name != null && patch.name !== current.name) {
    throw fail('field_immutable', "'name' cannot be changed after creation; create a new deployment instead.");
  }
  for (const [field, value] of [
    ['source', patch.source],
    ['revision_source', patch.revision_source],
  ] as const) {
    if (value != null && canonicalSource(value) !== current.source) {
      throw fail('field_immutable', `'${field}' cannot be changed: this deployment's source is '${current.source}'.`);
    }
  }

  const input = patch.source_config ?? {};
  const sourceConfig: SourceConfig = { ...current.sourceConfig };
  for (const field of FIXED_SOURCE_CONFIG) {
    const given = input[field];
    // Ids compare case-insensitively: they are stored in lower case.
    const value = given != null && (field === 'integration_id' || field === 'listener_id') ? given.toLowerCase() : given;
    if (value != null && value !== current.sourceConfig[field]) {
      throw fail('field_immutable', `'source_config.${field}' cannot be changed after creation.`);
    }
  }
  const namespace = input.listener_config?.k8s_namespace;
  if (namespace != null && namespace !== current.sourceConfig.listener_config?.k8s_namespace) {
    throw fail('field_immutable', "'source_config.listener_config.k8s_namespace' cannot be changed after creation.");
  }
  for (const field of IN_PLACE_SOURCE_CONFIG) {
    const value = input[field];
    if (value != null) (sourceConfig as unknown as Record<string, unknown>)[field] = value;
  }

  const givenRevision = givenRevisionFields(patch.source_revision_config);
  const secrets = patch.secrets != null && patch.secrets.length > 0 ? patch.secrets : null;
  if (secrets) validateSecrets(secrets);
  const resourceSpec = input.resource_spec != null ? completeResourceSpec(input.resource_spec) : null;

  const needsRevision =
    Object.keys(givenRevision).length > 0 ||
    (secrets !== null && !sameSecrets(secrets, current.secrets)) ||
    (resourceSpec !== null && !sameJson(resourceSpec, current.resourceSpec));

  return {
    sourceConfig,
    displayName: patch.display_name ?? undefined,
    imageVersion: patch.image_version ?? undefined,
    revision: needsRevision
      ? {
          config: nextRevisionConfig(current, givenRevision, patch.tracked_packages),
          resourceSpec: resourceSpec ?? current.resourceSpec,
          secrets: secrets ?? current.secrets,
          imageRef: reusedImage(current, givenRevision),
        }
      : null,
  };
}

/** A revision made explicitly (POST …/revisions): always new, otherwise like a PATCH. */
export function planExplicitRevision(
  current: DeploymentState,
  input: {
    source_revision_config?: RevisionConfigInput | null;
    resource_spec?: ResourceSpec | null;
    secrets?: Secret[] | null;
    tracked_packages?: string[] | null;
  },
): RevisionPlan {
  const givenSecrets = input.secrets != null && input.secrets.length > 0 ? input.secrets : null;
  // The current secrets passed these checks when they were stored.
  if (givenSecrets) validateSecrets(givenSecrets);
  const secrets = givenSecrets ?? current.secrets;
  const given = givenRevisionFields(input.source_revision_config);
  return {
    config: nextRevisionConfig(current, given, input.tracked_packages),
    resourceSpec: input.resource_spec != null ? completeResourceSpec(input.resource_spec) : current.resourceSpec,
    secrets,
    imageRef: reusedImage(current, given),
  };
}

/**
 * A change of secrets alone, merged into `secrets` by the caller: a new revision exactly as a
 * PATCH sending that full set would make, or null when it equals the current set. Unlike a
 * PATCH, an empty set here means "no secrets", so the last one can be removed.
 */
export function planSecretsChange(current: DeploymentState, secrets: Secret[]): RevisionPlan | null {
  if (sameSecrets(secrets, current.secrets)) return null;
  return { config: nextRevisionConfig(current, {}, undefined), resourceSpec: current.resourceSpec, secrets, imageRef: reusedImage(current, {}) };
}

/**
 * An uploaded archive is built once and then removed: a new revision without a new upload
 * (new secrets, say) runs the image the latest one was built into.
 */
function reusedImage(current: DeploymentState, given: Partial<RevisionConfig>): string | null {
  return current.source === 'internal_source' && given.source_tarball_path === undefined ? current.latestImage : null;
}

function nextRevisionConfig(current: DeploymentState, given: Partial<RevisionConfig>, trackedPackages: string[] | null | undefined): RevisionConfig {
  // The commit is resolved again for every new revision, so it is not carried over.
  const merged: Partial<RevisionConfig> = { ...current.revisionConfig, ...given, repo_commit_sha: null };
  // Packages describe the code: they carry over unless the code (image, ref or upload) changes.
  const codeChanged = given.image_uri !== undefined || given.repo_ref !== undefined || given.source_tarball_path !== undefined;
  merged.tracked_packages = trackedPackages && trackedPackages.length > 0 ? trackedPackages : codeChanged ? null : current.revisionConfig.tracked_packages;
  return completeRevisionConfig(current.source, merged);
}
