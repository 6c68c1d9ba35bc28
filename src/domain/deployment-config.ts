import { DEFAULT_DEPLOYMENT_TYPE, type DeploymentType } from './deployment-status.js';
import { invalidField, sourceConfigError } from './errors.js';
import { checkRevisionSourceFields, repoRefProblem } from './source-fields.js';

export { sameJson } from './canonical-json.js';

/**
 * The canonical sources; `github` is how real clients spell `codehost`. Beyond the spec's
 * two, the LangGraph CLI's: `internal_source` (it uploads the project and Berth builds it)
 * and `internal_docker` (it pushes an image to Berth's registry and Berth runs it).
 */
export type Source = 'codehost' | 'external_docker' | 'internal_source' | 'internal_docker';
export const SOURCE_SPELLINGS = ['codehost', 'github', 'external_docker', 'internal_source', 'internal_docker'] as const;
export type SourceSpelling = (typeof SOURCE_SPELLINGS)[number];

export function canonicalSource(spelling: string): Source {
  return spelling === 'github' ? 'codehost' : (spelling as Source);
}

export const DEFAULT_GRAPH_CONFIG_PATH = 'langgraph.json';

/** Defaults the service fills in and returns (real-clients.md 4.6). */
export const RESOURCE_SPEC_DEFAULTS = { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 2048 } as const;

export type ResourceSpec = Record<string, unknown>;

/** Deployment-level settings: changed in place, never by a new revision. */
export interface SourceConfig {
  integration_id: string | null;
  repo_url: string | null;
  deployment_type: DeploymentType;
  build_on_push: boolean | null;
  custom_url: string | null;
  listener_id: string | null;
  listener_config: { k8s_namespace: string } | null;
  install_command: string | null;
  build_command: string | null;
  /** Berth's own: how long the build and deploy steps may take before they fail. */
  build_timeout_seconds: number | null;
  deploy_timeout_seconds: number | null;
}

/**
 * `source_config` once the deployment serves at `url` (it served at `servedAt` before):
 * custom_url is the user's to set (a proxy in front), so Berth fills it only when empty and
 * keeps up only the one it filled itself.
 */
export function withServingUrl(config: SourceConfig, servedAt: string | null, url: string): SourceConfig {
  if (config.custom_url && config.custom_url !== servedAt) return config;
  return { ...config, custom_url: url };
}

/** What a revision is built and run from. */
export interface RevisionConfig {
  repo_ref: string | null;
  graph_config_path: string | null;
  image_uri: string | null;
  repo_commit_sha: string | null;
  tracked_packages: string[] | null;
  /** `internal_source`: the uploaded archive (the `object_path` of POST …/upload-url). */
  source_tarball_path?: string | null;
}

/** Fields of `source_config` in a request; null and absent both mean "not given". */
export interface SourceConfigInput {
  integration_id?: string | null;
  repo_url?: string | null;
  deployment_type?: DeploymentType | null;
  build_on_push?: boolean | null;
  custom_url?: string | null;
  resource_spec?: ResourceSpec | null;
  listener_id?: string | null;
  listener_config?: { k8s_namespace?: string | null } | null;
  install_command?: string | null;
  build_command?: string | null;
  build_timeout_seconds?: number | null;
  deploy_timeout_seconds?: number | null;
}

export interface RevisionConfigInput {
  repo_ref?: string | null;
  graph_config_path?: string | null;
  langgraph_config_path?: string | null;
  image_uri?: string | null;
  source_tarball_path?: string | null;
}

/**
 * The revision fields a request sets (non-null), with the config-path alias folded in.
 * A ref or config path git or the build would refuse is a 422 here (source-fields.ts).
 */
export function givenRevisionFields(input: RevisionConfigInput | null | undefined): Partial<RevisionConfig> {
  if (!input) return {};
  checkRevisionSourceFields(input);
  const given: Partial<RevisionConfig> = {};
  if (input.repo_ref != null) given.repo_ref = input.repo_ref;
  if (input.image_uri != null) given.image_uri = input.image_uri;
  if (input.source_tarball_path != null) given.source_tarball_path = input.source_tarball_path;
  const canonical = input.graph_config_path ?? null;
  const alias = input.langgraph_config_path ?? null;
  if (canonical !== null && alias !== null && canonical !== alias) {
    throw sourceConfigError("'graph_config_path' and its alias 'langgraph_config_path' were both given with different values.");
  }
  if ((canonical ?? alias) !== null) given.graph_config_path = canonical ?? alias;
  return given;
}

/** Applies the source's defaults and checks what it requires. */
export function completeRevisionConfig(source: Source, config: Partial<RevisionConfig>, defaults: { repoDefaultBranch?: string } = {}): RevisionConfig {
  const complete: RevisionConfig = {
    repo_ref: config.repo_ref ?? null,
    graph_config_path: config.graph_config_path ?? null,
    image_uri: config.image_uri ?? null,
    repo_commit_sha: config.repo_commit_sha ?? null,
    tracked_packages: config.tracked_packages ?? null,
    source_tarball_path: config.source_tarball_path ?? null,
  };
  const refuse = (field: keyof RevisionConfig, why: string) => {
    if (complete[field] !== null) throw sourceConfigError(`'source_revision_config.${field}' ${why}`);
  };
  switch (source) {
    case 'external_docker':
      if (!complete.image_uri) {
        throw sourceConfigError("'source_revision_config.image_uri' is required for source 'external_docker'.");
      }
      refuse('repo_ref', "applies only to code-host deployments; leave it null for 'external_docker'.");
      refuse('graph_config_path', "applies only to code-host deployments; leave it null for 'external_docker'.");
      refuse('source_tarball_path', "applies only to 'internal_source' deployments.");
      return complete;
    case 'internal_docker':
      // The image comes with the PATCH that follows the push, so it may be absent at creation.
      refuse('repo_ref', "applies only to code-host deployments; leave it null for 'internal_docker'.");
      refuse('source_tarball_path', "applies only to 'internal_source' deployments.");
      return complete;
    case 'internal_source':
      // The archive comes with the PATCH that follows the upload, so it may be absent at creation.
      refuse('image_uri', "applies only to image deployments; 'internal_source' deployments are built from an uploaded archive.");
      refuse('repo_ref', "applies only to code-host deployments; 'internal_source' deployments are built from an uploaded archive.");
      complete.graph_config_path ??= DEFAULT_GRAPH_CONFIG_PATH;
      return complete;
    case 'codehost':
      refuse('image_uri', "applies only to 'external_docker' deployments; code-host deployments are built from 'repo_ref'.");
      refuse('source_tarball_path', "applies only to 'internal_source' deployments; code-host deployments are built from 'repo_ref'.");
      if (complete.repo_ref === null && defaults.repoDefaultBranch) {
        // The code host names its default branch; one git would misread is not taken either.
        const problem = repoRefProblem(defaults.repoDefaultBranch);
        if (problem) throw sourceConfigError(`the repository's default branch cannot be built (${problem}); give 'source_revision_config.repo_ref'.`);
        complete.repo_ref = defaults.repoDefaultBranch;
      }
      if (!complete.repo_ref) {
        throw sourceConfigError("'source_revision_config.repo_ref' is required for code-host deployments (the branch or ref to build, e.g. 'main').");
      }
      complete.graph_config_path ??= DEFAULT_GRAPH_CONFIG_PATH;
      return complete;
  }
}

/** Sources whose revisions Berth builds into an image (from a repository or an uploaded archive). */
export function isBuiltSource(source: Source): boolean {
  return source === 'codehost' || source === 'internal_source';
}

/** The source-specific settings of a new deployment. Listener placement is checked separately. */
export function newSourceConfig(source: Source, input: SourceConfigInput | null | undefined): SourceConfig {
  const config: SourceConfig = {
    integration_id: input?.integration_id?.toLowerCase() ?? null,
    repo_url: input?.repo_url ?? null,
    deployment_type: input?.deployment_type ?? DEFAULT_DEPLOYMENT_TYPE,
    build_on_push: input?.build_on_push ?? null,
    custom_url: input?.custom_url ?? null,
    listener_id: input?.listener_id?.toLowerCase() ?? null,
    listener_config: input?.listener_config?.k8s_namespace ? { k8s_namespace: input.listener_config.k8s_namespace } : null,
    install_command: input?.install_command ?? null,
    build_command: input?.build_command ?? null,
    build_timeout_seconds: input?.build_timeout_seconds ?? null,
    deploy_timeout_seconds: input?.deploy_timeout_seconds ?? null,
  };
  if (source === 'codehost') {
    if (!config.integration_id) {
      throw sourceConfigError("'source_config.integration_id' is required for code-host deployments.");
    }
    if (!config.repo_url) {
      throw sourceConfigError("'source_config.repo_url' is required for code-host deployments.");
    }
  } else {
    for (const field of ['integration_id', 'repo_url'] as const) {
      if (config[field] !== null) {
        throw sourceConfigError(`'source_config.${field}' applies only to code-host deployments.`);
      }
    }
  }
  return config;
}

/**
 * Bytes of JSON a resource spec may take. Every answer about a deployment or revision
 * carries it, so it bounds those answers and list pages (Kubernetes itself allows 256 KiB
 * of annotations per object; a control plane's spec needs far less).
 */
export const MAX_RESOURCE_SPEC_BYTES = 64 * 1024;

/**
 * The resource spec with the defaults filled in; scale bounds must make sense and its JSON
 * must fit in MAX_RESOURCE_SPEC_BYTES.
 */
export function completeResourceSpec(spec: ResourceSpec | null | undefined): ResourceSpec {
  const complete: ResourceSpec = { ...RESOURCE_SPEC_DEFAULTS, ...dropNulls(spec ?? {}) };
  for (const [min, max] of [
    ['min_scale', 'max_scale'],
    ['queue_min_scale', 'queue_max_scale'],
    ['orchestrator_min_scale', 'orchestrator_max_scale'],
  ] as const) {
    const low = complete[min];
    const high = complete[max];
    if (typeof low === 'number' && typeof high === 'number' && low > high) {
      throw sourceConfigError(`'resource_spec.${min}' (${low}) is greater than 'resource_spec.${max}' (${high}).`);
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(complete));
  if (bytes > MAX_RESOURCE_SPEC_BYTES) {
    throw invalidField({
      type: 'value_error',
      loc: ['body', 'source_config', 'resource_spec'],
      msg: `Value error, resource_spec takes ${bytes} bytes as JSON; at most ${MAX_RESOURCE_SPEC_BYTES} bytes (64 KiB) are accepted`,
      input: '{…}',
      ctx: { max_bytes: MAX_RESOURCE_SPEC_BYTES, actual_bytes: bytes },
    });
  }
  return complete;
}

function dropNulls(spec: ResourceSpec): ResourceSpec {
  return Object.fromEntries(Object.entries(spec).filter(([, value]) => value !== null));
}

/** Limits for a local runtime: the spec's limits, else twice the requests (as the API documents). */
export function localLimits(spec: ResourceSpec): { cpu?: number; memoryMb?: number } {
  const number = (key: string) => (typeof spec[key] === 'number' ? (spec[key] as number) : undefined);
  const cpu = number('cpu_limit') ?? (number('cpu') !== undefined ? (number('cpu') as number) * 2 : undefined);
  const memoryMb = number('memory_limit_mb') ?? (number('memory_mb') !== undefined ? (number('memory_mb') as number) * 2 : undefined);
  return { cpu, memoryMb };
}

/** How long a deploy may take when `source_config.deploy_timeout_seconds` is not set (the engine's and a listener's alike). */
export const DEFAULT_DEPLOY_TIMEOUT_SECONDS = 300;
