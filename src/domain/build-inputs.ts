import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { platformVariables } from './platform-env.js';

/**
 * Everything a built image depends on (issue 21, item 1). Two revisions with equal inputs
 * in one workspace would build the same image, so the second reuses the first's. What is
 * not here cannot change an image: secrets, the resource spec and the display name reach
 * the container at run time or not at all.
 */
export interface BuildInputs {
  /** `commit:<sha>` for a repository, `archive:sha256:<hex>` for an uploaded archive. */
  source: string;
  /** The commit the build uses (a repository source); the build checks out exactly this one. */
  commit_sha: string | null;
  graph_config_path: string;
  /** SHA-256 of langgraph.json as read. */
  graph_config_sha256: string;
  install_command: string | null;
  build_command: string | null;
  /** The image in FROM, and its id in the store builds read it from. */
  base_image: string;
  base_image_digest: string;
  /** Berth's Dockerfile generator: a change in what it writes changes every image. */
  generator_version: number;
}

/** What a revision shows about its build: the inputs, their key, and the revision whose image it reused (null: it built its own). */
export interface RevisionBuild extends BuildInputs {
  key: string;
  reused_from_revision_id: string | null;
}

/**
 * The key revisions are matched by. The workspace is part of it, so a revision can only
 * ever match revisions of its own workspace: images are never shared across workspaces,
 * even ones built from the same public commit (an image may hold what a workspace's
 * build wrote into it).
 */
export function buildKey(workspaceId: string, inputs: BuildInputs): string {
  const { source, graph_config_path, graph_config_sha256, install_command, build_command, base_image, base_image_digest, generator_version } = inputs;
  const identity = {
    workspaceId,
    source,
    graph_config_path,
    graph_config_sha256,
    install_command,
    build_command,
    base_image,
    base_image_digest,
    generator_version,
  };
  return createHash('sha256').update(canonicalJson(identity)).digest('hex');
}

/** The build log's line about a build's inputs (after "Build inputs: "). */
export function describeBuildInputs(build: RevisionBuild): string {
  return [
    build.source,
    `${build.graph_config_path} sha256:${build.graph_config_sha256.slice(0, 12)}`,
    `install_command ${build.install_command ?? '(default)'}`,
    `build_command ${build.build_command ?? '(default)'}`,
    `base ${build.base_image} (${build.base_image_digest.slice(0, 19)})`,
    `generator v${build.generator_version}`,
    `key ${build.key.slice(0, 12)}`,
  ].join(', ');
}

/** The build log's line of a revision that takes the image of one built from the same inputs; `tail` says what is spared. */
export function reusingImageLine(
  found: { image_ref: string; seq: number; revision_id: string; deployment_id: string },
  deploymentId: string,
  tail: string,
): string {
  const owner = found.deployment_id === deploymentId ? '' : ` of deployment ${found.deployment_id}`;
  return `Reusing image ${found.image_ref}, built by revision ${found.seq} (${found.revision_id})${owner} from the same inputs; ${tail}.`;
}

/** What a build runner reports of a build's inputs; the build settings are the control plane's own. */
export type ReportedBuildInputs = Omit<BuildInputs, 'install_command' | 'build_command'>;

/**
 * A build's inputs from what its runner reported and what the control plane knows: the build
 * settings are taken from the job, never from the report, and the report must name a source
 * of the job's kind (a commit for a repository, an archive's digest for an upload). Null
 * when it does not: such a report is refused.
 */
export function runnerBuildInputs(
  reported: ReportedBuildInputs,
  known: { sourceKind: 'git' | 'archive'; install_command: string | null; build_command: string | null },
): BuildInputs | null {
  const { source, commit_sha, graph_config_path, graph_config_sha256, base_image, base_image_digest, generator_version } = reported;
  const consistent =
    known.sourceKind === 'git' ? commit_sha !== null && source === `commit:${commit_sha}` : commit_sha === null && source.startsWith('archive:sha256:');
  if (!consistent) return null;
  return {
    source,
    commit_sha,
    graph_config_path,
    graph_config_sha256,
    install_command: known.install_command,
    build_command: known.build_command,
    base_image,
    base_image_digest,
    generator_version,
  };
}

/**
 * The environment a revision's container gets, lowest precedence first: langgraph.json's
 * `env`, then the deployment's secrets, then what Berth provisions and sets itself. This is
 * the LangGraph CLI's order: `langgraph up` puts the file's variables under what compose
 * sets explicitly, and `langgraph deploy` turns `env` into the deployment's secrets, which
 * are then the deployment's to change (so an edited secret must win over the file it came
 * from, and nothing is applied twice).
 */
export function runEnvironment(layers: {
  configEnv: Record<string, string>;
  secrets: Record<string, string>;
  berth: Record<string, string>;
}): Record<string, string> {
  return { ...layers.configEnv, ...layers.secrets, ...layers.berth };
}

type Variable = { name: string; value: string };

/**
 * Everything a revision's container gets, by name, in runEnvironment's order, wherever it
 * runs (the local runtime or a listener): the layers as read and decrypted by the caller,
 * the provisioned databases' variables and the platform's own.
 */
export function containerEnvironment(parts: {
  configEnv: Record<string, string>;
  secrets: readonly Variable[];
  provisioned: readonly Variable[];
  deployment: { id: string; name: string };
  revision: { id: string };
}): Record<string, string> {
  const byName = (variables: readonly Variable[]) => Object.fromEntries(variables.map(({ name, value }) => [name, value]));
  const berth = { ...byName(parts.provisioned), ...platformVariables(parts.deployment, parts.revision) };
  return runEnvironment({ configEnv: parts.configEnv, secrets: byName(parts.secrets), berth });
}
