import { buildKey, describeBuildInputs, type RevisionBuild, reusingImageLine } from '../domain/build-inputs.js';
import { encryptConfigEnv } from '../security/config-env.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import { builtWithKey, type BuiltImageCandidate, type RevisionRecord } from '../store/repositories/revisions.js';
import { buildSource } from './build-source.js';
import type { WorkContext } from './context.js';
import type { BuildRequest, IdentifiedBuild, StepContext } from './drivers/types.js';
import { flush, hop, writeLog } from './effects.js';

/**
 * Builds only when the build's inputs change (issue 21, item 1). At QUEUED, a revision to
 * be built has its inputs worked out (the driver's `identify`: the commit its ref names,
 * langgraph.json, the build settings, the base image's id, the generator's version). When
 * a revision of the same workspace was built from the same inputs and its image is still
 * there, this one takes that image and goes straight to AWAITING_DEPLOY: no fetch of the
 * checkout, no build. Otherwise it builds, with its inputs kept so that later revisions can
 * reuse its image. Anything that cannot be worked out (a driver without `identify`, a base
 * image the build would pull, a ref that does not resolve) simply builds: the build says
 * what is wrong, if anything is.
 */
export async function buildOrReuse(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord, handover: string | null): Promise<void> {
  const identified = await identify(ctx, deployment, revision);
  // Stopped meanwhile (shutdown, delete, lost lease): whoever resumes decides from QUEUED.
  if (ctx.work.signal.aborted) return;
  if (!identified) {
    hop(ctx, revision, 'AWAITING_BUILD', null);
    return;
  }
  const { inputs, env } = identified;
  const build: RevisionBuild = { ...inputs, key: buildKey(deployment.workspace_id, inputs), reused_from_revision_id: null };
  const config_env_encrypted = encryptConfigEnv(ctx.encryptor, revision.id, env);
  await writeLog(ctx, revision, 'build', 'INFO', `Build inputs: ${describeBuildInputs(build)}.`);
  const reusable = await reusableImage(ctx, deployment, revision, build.key);
  if ('gone' in reusable) {
    const why =
      reusable.gone.length > 0
        ? `the image built from them by revision ${reusable.gone.map((c) => c.seq).join(', ')} is gone from the image store`
        : 'no revision of this workspace was built from them yet';
    await writeLog(ctx, revision, 'build', 'INFO', `Building: ${why}.`);
    hop(ctx, revision, 'AWAITING_BUILD', null, { build, config_env_encrypted });
    return;
  }
  const found = reusable.found;
  await writeLog(ctx, revision, 'build', 'INFO', reusingImageLine(found, deployment.id, 'nothing to fetch or build'));
  const config = revision.source_revision_config;
  hop(ctx, revision, 'AWAITING_DEPLOY', handover, {
    image_ref: found.image_ref,
    build: { ...build, reused_from_revision_id: found.revision_id },
    config_env_encrypted,
    source_revision_config: { ...config, repo_commit_sha: inputs.commit_sha ?? config.repo_commit_sha },
  });
  // An upload that needs no build is done with, as a built one is: once the move is written.
  if (config.source_tarball_path && (await flush(ctx)) === 'ok') await ctx.uploads.discard(config.source_tarball_path).catch(() => {});
}

/**
 * A revision that came with an image (a redeploy, a rollback) runs it when it is still in
 * the image store; when it is gone (removed with its revision, pruned), it builds that
 * revision's commit again rather than fail the deploy, and the build log says so. True
 * when it goes to build. A builder that cannot tell keeps the image (the deploy says if
 * it is missing).
 */
export async function rebuildWhenImageGone(ctx: WorkContext, revision: RevisionRecord): Promise<boolean> {
  const image = revision.image_ref;
  const exists = ctx.builder.imageExists?.bind(ctx.builder);
  if (!image || !exists) return false;
  const present = await exists(image, AbortSignal.any([ctx.work.signal, AbortSignal.timeout(60_000)])).catch(() => false);
  if (present || ctx.work.signal.aborted) return false;
  const build = revision.build;
  const commit = build?.commit_sha;
  const what = commit ? `commit ${commit}` : build ? build.source : `ref ${revision.source_revision_config.repo_ref ?? '(default)'}`;
  await writeLog(ctx, revision, 'build', 'INFO', `Rebuilding: image ${image} is gone from the image store; building ${what} again.`);
  // The inputs stay (buildRequestOf builds their commit), but nothing is reused any more.
  hop(ctx, revision, 'AWAITING_BUILD', null, { image_ref: null, ...(build ? { build: { ...build, reused_from_revision_id: null } } : {}) });
  return true;
}

/** The build request of a revision; a revision whose inputs named a commit builds exactly that commit (the ref may have moved since). */
export async function buildRequestOf(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord): Promise<BuildRequest> {
  const source = await buildSource(ctx, deployment, revision);
  const commit = revision.build?.commit_sha;
  const sourceConfig = deployment.source_config;
  return {
    workspaceId: deployment.workspace_id,
    deploymentId: deployment.id,
    deploymentName: deployment.name.toLowerCase(),
    revisionId: revision.id,
    source: source.kind === 'git' && commit ? { ...source, ref: commit } : source,
    graphConfigPath: revision.source_revision_config.graph_config_path ?? 'langgraph.json',
    installCommand: sourceConfig.install_command,
    buildCommand: sourceConfig.build_command,
  };
}

async function identify(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord): Promise<IdentifiedBuild | null> {
  const driver = ctx.builder;
  if (!driver.identify) return null;
  const timeoutMs = (deployment.source_config.build_timeout_seconds ?? 0) * 1000 || ctx.settings.buildTimeoutMs;
  const step: StepContext = {
    signal: AbortSignal.any([ctx.work.signal, AbortSignal.timeout(timeoutMs)]),
    log: (level, message) => writeLog(ctx, revision, 'build', level, message),
  };
  try {
    // Resolved afresh: the revision's ref, not a commit an earlier try pinned.
    const request = await buildRequestOf(ctx, deployment, { ...revision, build: null });
    return await driver.identify(request, step);
  } catch (error) {
    if (ctx.work.signal.aborted) return null;
    const reason = error instanceof Error ? error.message : String(error);
    await writeLog(ctx, revision, 'build', 'INFO', `Could not tell the build's inputs before building (${reason}); building.`);
    return null;
  }
}

type Reusable = { found: BuiltImageCandidate } | { gone: BuiltImageCandidate[] };

/** The newest image of the workspace built from these inputs that still exists. */
async function reusableImage(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord, key: string): Promise<Reusable> {
  const candidates = (await builtWithKey(ctx.db, deployment.workspace_id, key)).filter((c) => c.revision_id !== revision.id);
  const exists = ctx.builder.imageExists?.bind(ctx.builder);
  const gone: BuiltImageCandidate[] = [];
  const checked = new Map<string, boolean>();
  for (const candidate of candidates) {
    let present = checked.get(candidate.image_ref);
    if (present === undefined) {
      present = exists ? await exists(candidate.image_ref, AbortSignal.any([ctx.work.signal, AbortSignal.timeout(60_000)])).catch(() => false) : false;
      checked.set(candidate.image_ref, present);
    }
    if (present) return { found: candidate };
    gone.push(candidate);
  }
  return { gone };
}
