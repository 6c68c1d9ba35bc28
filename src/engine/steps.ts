import { canonicalSource, isBuiltSource, localLimits, type RevisionConfig, type Source } from '../domain/deployment-config.js';
import { stepTimeout } from '../domain/fair-share.js';
import { REVISION_VARIABLES } from '../domain/platform-env.js';
import { isListenerOwned } from '../domain/queue-policy.js';
import { decryptSecretSet } from '../security/secret-sets.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import { configEnvOf, type RevisionRecord, runtimeHandleOf } from '../store/repositories/revisions.js';
import { decryptConfigEnv, encryptConfigEnv } from '../security/config-env.js';
import { containerEnvironment } from '../domain/build-inputs.js';
import { secretEntries } from '../store/repositories/secret-sets.js';
import { moveDeployment } from '../lifecycle/deployments.js';
import { buildOrReuse, buildRequestOf, rebuildWhenImageGone } from './build-reuse.js';
import type { WorkContext } from './context.js';
import { databaseVariables, missingDatabases, provisionDatabases } from './databases.js';
import { hop, leaseFence, markDeployed, moveRevision, writeLog } from './effects.js';
import { imageOf, judgeRevisionImage, pullCredentials } from './image-access.js';
import { type Next, quietStep, runStep, type StepSpec } from './run-step.js';

export type { Next } from './run-step.js';

/**
 * Takes a revision one status further. Each call makes at most one transition, so a
 * crash between calls leaves a status from which the next worker simply carries on.
 * Transitions that need nothing from outside are `hop`s, written together with the next
 * one that does (effects.ts): an image revision reaches DEPLOYING in one transaction.
 */
export async function advance(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord): Promise<Next> {
  const config = revision.source_revision_config;
  const source = canonicalSource(revision.source);
  switch (revision.status) {
    case 'CREATING': {
      try {
        await secretsOf(ctx, revision);
      } catch {
        await moveRevision(
          ctx,
          revision,
          'CREATE_FAILED',
          "The revision's secrets cannot be decrypted: BERTH_ENCRYPTION_KEY (or the data directory's encryption.key) is not the key they were written with. Restore that key and redeploy.",
        );
        return 'again';
      }
      hop(ctx, revision, 'QUEUED', null);
      return 'again';
    }
    case 'QUEUED': {
      const waitingFor = nothingYet(source, revision);
      if (waitingFor) {
        await moveRevision(ctx, revision, 'SKIPPED', waitingFor);
        return 'next';
      }
      if (!(await databasesReady(ctx, deployment, revision))) return 'again';
      if (isBuiltSource(source) && !revision.image_ref) {
        await buildOrReuse(ctx, deployment, revision, handoverMessage(deployment));
        return ctx.work.signal.aborted ? 'leave' : 'again';
      }
      if (isBuiltSource(source)) {
        if (await rebuildWhenImageGone(ctx, revision)) return ctx.work.signal.aborted ? 'leave' : 'again';
        await writeLog(ctx, revision, 'build', 'INFO', `Reusing image ${revision.image_ref}; no build needed.`);
      }
      hop(ctx, revision, 'AWAITING_DEPLOY', handoverMessage(deployment));
      return 'again';
    }
    case 'AWAITING_BUILD':
      hop(ctx, revision, 'BUILDING', null);
      return 'again';
    case 'BUILDING':
      return build(ctx, deployment, revision, config);
    case 'AWAITING_DEPLOY': {
      // Handed to the listener: its report moves the revision on, not the engine.
      if (isListenerOwned(revision.status, deployment.listener_id !== null)) {
        return (await refuseForeignImage(ctx, deployment, revision, imageOf(revision))) ? 'again' : 'next';
      }
      const unavailable = await ctx.runtime.unavailableReason();
      if (unavailable) await moveRevision(ctx, revision, 'DEPLOY_FAILED', `Deploy failed: ${unavailable}`);
      else hop(ctx, revision, 'DEPLOYING', null);
      return 'again';
    }
    case 'DEPLOYING':
      return deploy(ctx, deployment, revision);
    default:
      return 'next';
  }
}

async function build(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord, config: RevisionConfig): Promise<Next> {
  const sourceConfig = deployment.source_config;
  const spec = await stepSpec(ctx, revision, 'build', sourceConfig.build_timeout_seconds);
  const limits = { timeoutSeconds: Math.round(spec.timeoutMs / 1000), resourceSpec: revision.resource_spec ?? null };
  const result = await runStep(ctx, revision, spec, async (step) =>
    ctx.builder.build({ ...(await buildRequestOf(ctx, deployment, revision)), ...limits }, step),
  );
  // An uploaded archive is needed only until it is built (or its build ended); a paused
  // build, or one that never started, keeps it for whoever resumes.
  if (config.source_tarball_path && (result.ok || (result.started && result.next !== 'leave')))
    await ctx.uploads.discard(config.source_tarball_path).catch(() => {});
  if (!result.ok) return result.next;
  const built = { ...config, repo_commit_sha: result.value.commitSha };
  await moveRevision(ctx, revision, 'AWAITING_DEPLOY', handoverMessage(deployment), {
    image_ref: result.value.image,
    image_id: result.value.id ?? null,
    image_digest: result.value.digest ?? null,
    source_revision_config: built,
    // Inputs learnt while building (a build runner's report): later revisions built from the same ones reuse this image.
    ...(result.value.build ? { build: result.value.build } : {}),
    ...(result.value.env ? { config_env_encrypted: encryptConfigEnv(ctx.encryptor, revision.id, result.value.env) } : {}),
  });
  return 'again';
}

async function deploy(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord): Promise<Next> {
  const sourceConfig = deployment.source_config;
  const resources = revision.resource_spec ?? {};
  // Built revisions run what they were built into; image revisions the image they name.
  const image = imageOf(revision);
  if (!image) {
    await moveRevision(ctx, revision, 'DEPLOY_FAILED', 'Deploy failed: the revision has no image to run.');
    return 'again';
  }
  const verdict = await judgeRevisionImage(ctx, deployment, revision, image);
  if (!verdict.allowed) {
    await moveRevision(ctx, revision, 'DEPLOY_FAILED', `Deploy failed: ${verdict.reason}`);
    return 'again';
  }
  const spec = await stepSpec(ctx, revision, 'deploy', sourceConfig.deploy_timeout_seconds);
  const env = containerEnvironment({
    // Only built revisions read a langgraph.json; image revisions spare the query.
    configEnv: isBuiltSource(canonicalSource(revision.source)) ? decryptConfigEnv(ctx.encryptor, revision.id, await sealedConfigEnv(ctx, revision)) : {},
    secrets: await secretsOf(ctx, revision),
    // Provisioned databases are looked up only when the last read saw some.
    provisioned: ctx.lastRead.hasDatabases !== false ? await databaseVariables(ctx, deployment.id) : [],
    deployment,
    revision,
  });
  const pull = await pullCredentials(ctx, revision, verdict.registryRepository);
  const result = await runStep(ctx, revision, spec, (step) =>
    ctx.runtime.start(
      {
        deploymentId: deployment.id,
        revisionId: revision.id,
        instanceName: deployment.name.toLowerCase(),
        image,
        env,
        revisionEnv: REVISION_VARIABLES,
        resources: localLimits(resources),
        ...pull,
      },
      step,
    ),
  );
  if (!result.ok) return result.next;
  const previous = deployment.active_revision_id;
  if (!(await markDeployed(ctx, deployment, revision, result.value))) {
    // Interrupted or lease lost while starting: nothing may keep running for it.
    await ctx.runtime.retire(result.value.handle, quietStep(ctx));
    return 'again';
  }
  if (previous && previous !== revision.id) await retirePrevious(ctx, revision, previous);
  return 'next';
}

/**
 * A build or deploy step with the deployment's timeout, clamped to the operator's maximum;
 * a clamped timeout is said in the step's log, and a timeout then names the maximum.
 */
async function stepSpec(ctx: WorkContext, revision: RevisionRecord, step: 'build' | 'deploy', requestedSeconds: number | null | undefined): Promise<StepSpec> {
  const build = step === 'build';
  const field = `source_config.${step}_timeout_seconds`;
  const setting = build ? 'BERTH_MAX_BUILD_TIMEOUT_SECONDS' : 'BERTH_MAX_DEPLOY_TIMEOUT_SECONDS';
  const maxSeconds = build ? ctx.settings.maxBuildTimeoutSeconds : ctx.settings.maxDeployTimeoutSeconds;
  const timeout = stepTimeout(requestedSeconds, build ? ctx.settings.buildTimeoutMs : ctx.settings.deployTimeoutMs, maxSeconds);
  const clamped = timeout.askedMs !== undefined;
  if (clamped) {
    const asked = Math.round((timeout.askedMs ?? 0) / 1000);
    await writeLog(ctx, revision, step, 'WARNING', `The ${step} may take at most ${maxSeconds} s on this server (${setting}); ${field} asks for ${asked} s.`);
  }
  return {
    name: step,
    logType: step,
    failedStatus: build ? 'BUILD_FAILED' : 'DEPLOY_FAILED',
    timeoutMs: timeout.ms,
    timeoutSetting: clamped ? `${field} (at most ${setting}, which the operator sets)` : field,
  };
}

/**
 * Before a deployment's revisions run, the databases Berth provisions for it exist
 * (AWAITING_DATABASE → READY). False when setting them up failed: the revision then ended
 * CREATE_FAILED with the reason, and the next revision tries again.
 */
async function databasesReady(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord): Promise<boolean> {
  const missing = await missingDatabases(ctx, deployment.id, await secretsOf(ctx, revision));
  if (missing.length > 0) {
    const spec: StepSpec = {
      ...(await stepSpec(ctx, revision, 'deploy', deployment.source_config.deploy_timeout_seconds)),
      name: 'database',
      failedStatus: 'CREATE_FAILED',
    };
    const result = await runStep(ctx, revision, spec, (step) => provisionDatabases(ctx, deployment, missing, step));
    if (!result.ok) return false;
    ctx.lastRead.hasDatabases = true;
  }
  // Without provisioning, a deployment becomes READY when its first revision serves (markDeployed).
  if (deployment.status === 'AWAITING_DATABASE' && Object.keys(ctx.provisioners).length > 0) {
    if (await moveDeployment(ctx, deployment.id, 'READY', { fence: leaseFence(ctx), origin: ctx.settings.workerId })) deployment.status = 'READY';
  }
  return true;
}

/** What the engine decided in memory (perhaps not written yet), else what is stored. */
async function sealedConfigEnv(ctx: WorkContext, revision: RevisionRecord): Promise<string | null> {
  return revision.config_env_encrypted !== undefined ? revision.config_env_encrypted : configEnvOf(ctx.db, revision.id);
}

/** The revision's secrets, decrypted (kept only encrypted, as read with the deployment's work). */
async function secretsOf(ctx: WorkContext, revision: RevisionRecord) {
  if (!revision.secret_set_id) return [];
  const entries = ctx.lastRead.secretEntries?.get(revision.secret_set_id) ?? (await secretEntries(ctx.db, [revision.secret_set_id]));
  return decryptSecretSet(ctx.encryptor, entries);
}

/**
 * The first revision of a deployment the LangGraph CLI creates has nothing in it yet: the
 * project is uploaded (or the image pushed) and sent in the PATCH that follows. It gives
 * way to that one, with a message saying so.
 */
function nothingYet(source: Source, revision: RevisionRecord): string | null {
  if (revision.image_ref) return null;
  const config = revision.source_revision_config;
  if (source === 'internal_source' && !config.source_tarball_path) {
    return 'Nothing to build yet: upload the project (POST …/upload-url, then PUT) and PATCH the deployment with its source_tarball_path.';
  }
  if (source === 'internal_docker' && !config.image_uri) {
    return 'Nothing to run yet: push an image (POST …/push-token) and PATCH the deployment with its image_uri.';
  }
  return null;
}

/**
 * A revision handed to a listener whose image the workspace may not run (stored before the rule)
 * ends DEPLOY_FAILED instead of being offered to the listener. True when it was failed.
 */
async function refuseForeignImage(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord, image: string): Promise<boolean> {
  if (!image) return false;
  const verdict = await judgeRevisionImage(ctx, deployment, revision, image);
  if (verdict.allowed) return false;
  await moveRevision(ctx, revision, 'DEPLOY_FAILED', `Deploy failed: ${verdict.reason}`);
  return true;
}

/** For a deployment placed on a listener, AWAITING_DEPLOY means it was handed over. */
function handoverMessage(deployment: DeploymentRecord): string | null {
  return deployment.listener_id ? `Handed to listener ${deployment.listener_id}; waiting for it to report the deployment.` : null;
}

/** Replaced only now that the new revision is healthy and serving. */
async function retirePrevious(ctx: WorkContext, revision: RevisionRecord, previousId: string): Promise<void> {
  const previous = await runtimeHandleOf(ctx.db, previousId);
  if (!previous?.runtime_handle) return;
  try {
    const step = quietStep(ctx);
    // A driver with standbys keeps it paused a while, for a rollback without a new start.
    const kept = ctx.runtime.park ? await ctx.runtime.park(previous.runtime_handle, step) : (await ctx.runtime.retire(previous.runtime_handle, step), false);
    const what = kept ? 'Paused' : 'Stopped';
    const why = kept ? ': kept as a standby, so a rollback to it starts nothing' : '';
    await writeLog(ctx, revision, 'deploy', 'INFO', `${what} revision ${previous.seq}, which this revision replaces${why}.`);
  } catch (error) {
    await writeLog(ctx, revision, 'deploy', 'WARNING', `Could not stop revision ${previous.seq}: ${(error as Error).message}`);
  }
}
