import { canonicalSource, type ResourceSpec, type RevisionConfig, type SourceConfig } from '../domain/deployment-config.js';
import type { RevisionStatus } from '../domain/revision-status.js';
import { revisionSecrets } from '../services/deployment-records.js';
import { nowIso } from '../store/database.js';
import type { DeploymentRow } from '../store/repositories/deployments.js';
import type { RevisionRow } from '../store/repositories/revisions.js';
import { finishStepRun, startStepRun } from '../store/repositories/step-runs.js';
import { StopSignal, stopReasonOf, type WorkContext } from './context.js';
import { DriverError, type LogLevel, type StepContext } from './drivers/types.js';
import { markDeployed, moveRevision, writeLog } from './effects.js';

/** What the deployment loop does after one advance: go on with this revision, look at the next, or leave. */
export type Next = 'again' | 'next' | 'leave';

const CLEANUP_GRACE_MS = 10_000;

interface StepSpec {
  name: 'build' | 'deploy';
  failedStatus: RevisionStatus;
  timeoutMs: number;
  /** Where a user raises the limit. */
  timeoutSetting: string;
}

/**
 * Takes a revision one status further. Each call makes at most one transition, so a
 * crash between calls leaves a status from which the next worker simply carries on.
 */
export async function advance(ctx: WorkContext, deployment: DeploymentRow, revision: RevisionRow): Promise<Next> {
  const config = JSON.parse(revision.source_revision_config) as RevisionConfig;
  const source = canonicalSource(revision.source);
  switch (revision.status) {
    case 'CREATING': {
      try {
        await revisionSecrets(ctx.db, ctx.encryptor, revision.id);
      } catch {
        await moveRevision(ctx, revision, 'CREATE_FAILED', "The revision's secrets cannot be decrypted: BERTH_ENCRYPTION_KEY (or the data directory's encryption.key) is not the key they were written with. Restore that key and redeploy.");
      return 'again';
      }
      await moveRevision(ctx, revision, 'QUEUED', null);
      return 'again';
    }
    case 'QUEUED': {
      const needsBuild = source === 'codehost' && !revision.image_ref;
      if (!needsBuild && source === 'codehost') await writeLog(ctx, revision, 'build', 'INFO', `Reusing image ${revision.image_ref}; no build needed.`);
      await moveRevision(ctx, revision, needsBuild ? 'AWAITING_BUILD' : 'AWAITING_DEPLOY', null);
      return 'again';
    }
    case 'AWAITING_BUILD':
      await moveRevision(ctx, revision, 'BUILDING', null);
      return 'again';
    case 'BUILDING':
      return build(ctx, deployment, revision, config);
    case 'AWAITING_DEPLOY': {
      if (deployment.listener_id) {
        const message = `Handed to listener ${deployment.listener_id}; waiting for it to report the deployment.`;
        if (revision.status_message !== message) await moveRevision(ctx, revision, 'AWAITING_DEPLOY', message);
        return 'leave';
      }
      const unavailable = await ctx.runtime.unavailableReason();
      await moveRevision(ctx, revision, unavailable ? 'DEPLOY_FAILED' : 'DEPLOYING', unavailable ? `Deploy failed: ${unavailable}` : null);
      return 'again';
    }
    case 'DEPLOYING':
      return deploy(ctx, deployment, revision, config);
    default:
      return 'next';
  }
}

async function build(ctx: WorkContext, deployment: DeploymentRow, revision: RevisionRow, config: RevisionConfig): Promise<Next> {
  const sourceConfig = JSON.parse(deployment.source_config) as SourceConfig & { build_timeout_seconds?: number | null };
  const spec: StepSpec = {
    name: 'build',
    failedStatus: 'BUILD_FAILED',
    timeoutMs: (sourceConfig.build_timeout_seconds ?? 0) * 1000 || ctx.settings.buildTimeoutMs,
    timeoutSetting: 'source_config.build_timeout_seconds',
  };
  const result = await runStep(ctx, revision, spec, (step) =>
    ctx.builder.build(
      {
        deploymentId: deployment.id,
        revisionId: revision.id,
        repoUrl: sourceConfig.repo_url ?? '',
        repoRef: config.repo_ref ?? '',
        graphConfigPath: config.graph_config_path ?? 'langgraph.json',
        installCommand: sourceConfig.install_command,
        buildCommand: sourceConfig.build_command,
      },
      step,
    ),
  );
  if (!result.ok) return result.next;
  const built = { ...config, repo_commit_sha: result.value.commitSha };
  await moveRevision(ctx, revision, 'AWAITING_DEPLOY', null, { image_ref: result.value.image, source_revision_config: JSON.stringify(built) });
  return 'again';
}

async function deploy(ctx: WorkContext, deployment: DeploymentRow, revision: RevisionRow, config: RevisionConfig): Promise<Next> {
  const sourceConfig = JSON.parse(deployment.source_config) as SourceConfig & { deploy_timeout_seconds?: number | null };
  const resources = revision.resource_spec ? (JSON.parse(revision.resource_spec) as ResourceSpec) : {};
  const image = (canonicalSource(revision.source) === 'codehost' ? revision.image_ref : config.image_uri) ?? '';
  if (!image) {
    await moveRevision(ctx, revision, 'DEPLOY_FAILED', 'Deploy failed: the revision has no image to run.');
    return 'again';
  }
  const spec: StepSpec = {
    name: 'deploy',
    failedStatus: 'DEPLOY_FAILED',
    timeoutMs: (sourceConfig.deploy_timeout_seconds ?? 0) * 1000 || ctx.settings.deployTimeoutMs,
    timeoutSetting: 'source_config.deploy_timeout_seconds',
  };
  const env = Object.fromEntries((await revisionSecrets(ctx.db, ctx.encryptor, revision.id)).map((s) => [s.name, s.value]));
  Object.assign(env, {
    LANGSMITH_DEPLOYMENT_NAME: deployment.name,
    LANGSMITH_HOST_PROJECT_ID: deployment.id,
    LANGSMITH_HOST_PROJECT_NAME: deployment.name,
    LANGSMITH_HOST_REVISION_ID: revision.id,
  });
  const result = await runStep(ctx, revision, spec, (step) =>
    ctx.runtime.start(
      {
        deploymentId: deployment.id,
        revisionId: revision.id,
        instanceName: deployment.name.toLowerCase(),
        image,
        env,
        resources: limits(resources),
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
  deployment.active_revision_id = revision.id;
  if (previous && previous !== revision.id) await retirePrevious(ctx, revision, previous);
  return 'next';
}

/** Replaced only now that the new revision is healthy and serving. */
async function retirePrevious(ctx: WorkContext, revision: RevisionRow, previousId: string): Promise<void> {
  const previous = await ctx.db.selectFrom('revisions').select(['runtime_handle', 'seq']).where('id', '=', previousId).executeTakeFirst();
  if (!previous?.runtime_handle) return;
  try {
    await ctx.runtime.retire(previous.runtime_handle, quietStep(ctx));
    await writeLog(ctx, revision, 'deploy', 'INFO', `Stopped revision ${previous.seq}, which this revision replaces.`);
  } catch (error) {
    await writeLog(ctx, revision, 'deploy', 'WARNING', `Could not stop revision ${previous.seq}: ${(error as Error).message}`);
  }
}

/** Limits for a local runtime: the spec's limits, else twice the requests (as the API documents). */
function limits(spec: ResourceSpec): { cpu?: number; memoryMb?: number } {
  const number = (key: string) => (typeof spec[key] === 'number' ? (spec[key] as number) : undefined);
  const cpu = number('cpu_limit') ?? (number('cpu') !== undefined ? (number('cpu') as number) * 2 : undefined);
  const memoryMb = number('memory_limit_mb') ?? (number('memory_mb') !== undefined ? (number('memory_mb') as number) * 2 : undefined);
  return { cpu, memoryMb };
}

type StepResult<T> = { ok: true; value: T } | { ok: false; next: Next };

/**
 * Runs one driver call with its timeout, its log stream and a record in engine_step_runs.
 * A driver failure or a timeout ends the revision in the step's *_FAILED status with a
 * message a person can act on; a stop (shutdown, lost lease, interruption, delete) leaves
 * the status for whoever continues.
 */
async function runStep<T>(ctx: WorkContext, revision: RevisionRow, spec: StepSpec, body: (step: StepContext) => Promise<T>): Promise<StepResult<T>> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new StopSignal('timeout')), spec.timeoutMs);
  const forward = () => controller.abort(ctx.work.signal.reason);
  ctx.work.signal.addEventListener('abort', forward, { once: true });
  ctx.step = { revisionId: revision.id, controller };
  const runId = await startStepRun(ctx.db, { revisionId: revision.id, step: spec.name, worker: ctx.settings.workerId, at: nowIso() });
  const step: StepContext = {
    signal: controller.signal,
    log: (level: LogLevel, message: string) => writeLog(ctx, revision, spec.name, level, message),
  };
  const work = body(step);
  try {
    const value = await Promise.race([work, aborted<T>(controller.signal)]);
    await finishStepRun(ctx.db, runId, 'succeeded', nowIso());
    return { ok: true, value };
  } catch (error) {
    const reason = stopReasonOf(controller.signal);
    // An aborted driver cleans up after itself (removes a half-started container): let it
    // finish, within reason, before the revision moves on or the process exits.
    if (reason) await Promise.race([work.catch(() => {}), new Promise((resolve) => setTimeout(resolve, CLEANUP_GRACE_MS))]);
    await finishStepRun(ctx.db, runId, reason ?? 'failed', nowIso());
    if (reason === 'timeout') {
      const seconds = Math.round(spec.timeoutMs / 1000);
      const message = `${title(spec.name)} timed out after ${seconds} s. Check the ${spec.name} logs for where it stalled; raise the limit with ${spec.timeoutSetting} if it needs longer.`;
      await writeLog(ctx, revision, spec.name, 'ERROR', message);
      await moveRevision(ctx, revision, spec.failedStatus, message);
      return { ok: false, next: 'again' };
    }
    if (reason) {
      await writeLog(ctx, revision, spec.name, 'INFO', stopMessage(reason));
      return { ok: false, next: reason === 'interrupted' ? 'again' : 'leave' };
    }
    if (error instanceof DriverError) {
      const message = `${title(spec.name)} failed: ${error.message}`;
      await writeLog(ctx, revision, spec.name, 'ERROR', message);
      await moveRevision(ctx, revision, spec.failedStatus, message);
      return { ok: false, next: 'again' };
    }
    ctx.logger.error({ err: error, revisionId: revision.id, step: spec.name }, 'engine step failed unexpectedly');
    const message = `${title(spec.name)} failed: an internal error occurred in Berth during the ${spec.name} step; the server log has the details (revision ${revision.id}).`;
    await writeLog(ctx, revision, spec.name, 'ERROR', message);
    await moveRevision(ctx, revision, spec.failedStatus, message);
    return { ok: false, next: 'again' };
  } finally {
    clearTimeout(timer);
    ctx.work.signal.removeEventListener('abort', forward);
    ctx.step = undefined;
  }
}

function aborted<T>(signal: AbortSignal): Promise<T> {
  return new Promise<T>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function quietStep(ctx: WorkContext): StepContext {
  return { signal: AbortSignal.timeout(ctx.settings.deployTimeoutMs), log: async () => {} };
}

function title(step: string): string {
  return step === 'build' ? 'Build' : 'Deploy';
}

function stopMessage(reason: string): string {
  switch (reason) {
    case 'interrupted':
      return 'Stopped: the revision was interrupted.';
    case 'deleting':
      return 'Stopped: the deployment is being deleted.';
    default:
      return 'Paused: this Berth process stopped working on the revision; another process will resume it.';
  }
}
