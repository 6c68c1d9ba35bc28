import type { Logger } from 'pino';
import { CodehostError, gitHubAppOf, type GitHubAppProvider, type RepositoryName } from '../codehost/index.js';
import { commitNotice, describe, gitHubRepository, statusContext } from '../domain/commit-status.js';
import { FIRST_RETRY_DELAY_MS, RETRY_WINDOW_MS, retryDelayMs } from '../domain/webhooks.js';
import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import { decryptCredentials } from '../security/integration-credentials.js';
import type { Db } from '../store/database.js';
import { findDeploymentById } from '../store/repositories/deployments.js';
import * as notices from '../store/repositories/github-notices.js';
import { findIntegrationById } from '../store/repositories/integrations.js';
import { leaseOutboxRow } from '../store/repositories/outbox.js';
import { findRevisionById } from '../store/repositories/revisions.js';
import { startOutboxLoop } from './outbox-loop.js';

export interface NotifierDeps {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  logger: Logger;
  /** BERTH_PUBLIC_URL: commit statuses link to the revision in the dashboard there; without it they link nowhere. */
  publicUrl: string | undefined;
}

export interface NotifierSettings {
  firstRetryDelayMs: number;
  /** How long a notice is retried before it is given up (and logged). */
  retryWindowMs: number;
  /** How long a sender holds a notice: longer than its three GitHub calls may take. */
  leaseMs: number;
  sweepMs: number;
  concurrency: number;
  now: () => number;
  random: () => number;
}

export const DEFAULT_NOTIFIER_SETTINGS: NotifierSettings = {
  firstRetryDelayMs: FIRST_RETRY_DELAY_MS,
  retryWindowMs: RETRY_WINDOW_MS,
  leaseMs: 180_000,
  sweepMs: 30_000,
  concurrency: 4,
  now: Date.now,
  random: Math.random,
};

const iso = (ms: number) => new Date(ms).toISOString();
const DEPLOYMENT_STATUS_DONE = 1;

/**
 * Tells GitHub how revisions of deployments on `github` integrations fare (docs/webhooks.md,
 * "Commit statuses and GitHub deployments") and why a pull request got no preview
 * (docs/previews.md): works off `github_notices` with the webhook deliverer's loop and
 * backoff. A failing GitHub never touches the revision: its notice is retried, and logged
 * without credentials.
 */
export function startGitHubNotifier(deps: NotifierDeps, overrides: Partial<NotifierSettings> = {}): { stop(): Promise<void> } {
  const settings = { ...DEFAULT_NOTIFIER_SETTINGS, ...overrides };
  const apps = new Map<string, { updatedAt: string; app: GitHubAppProvider }>();
  return startOutboxLoop({
    pass: () => notifyPass(deps, settings, apps),
    bus: deps.bus,
    logger: deps.logger,
    what: 'notifying GitHub',
    sweepMs: settings.sweepMs,
    now: settings.now,
  });
}

type Apps = Map<string, { updatedAt: string; app: GitHubAppProvider }>;

/** Sends what is due until nothing is; answers when the next notice can be sent. */
async function notifyPass(deps: NotifierDeps, settings: NotifierSettings, apps: Apps): Promise<string | undefined> {
  for (;;) {
    const { due, nextDueAt } = await notices.githubNoticeSchedule(deps.db, iso(settings.now()), settings.concurrency);
    if (due.length === 0) return nextDueAt;
    const results = await Promise.all(
      due.map((notice) =>
        send(deps, settings, apps, notice).catch((error: unknown) => {
          deps.logger.warn({ notice: notice.id, revision: notice.revision_id, error: safeMessage(error) }, 'a GitHub notice could not be attempted');
          return false;
        }),
      ),
    );
    // Notices that were all put off (taken by another sender, or waiting to retry) end the pass.
    if (!results.some(Boolean)) return (await notices.githubNoticeSchedule(deps.db, iso(settings.now()), 0)).nextDueAt;
  }
}

/**
 * What sending one notice takes: its GitHub calls, as steps whose success is remembered in
 * `steps_done` so that a retry repeats none; `what` names it in the logs.
 */
interface Plan {
  what: string;
  run: (stepsDone: number, done: (steps: number) => Promise<void>) => Promise<void>;
}

/** Sends one notice: true when it is done with (sent or dropped), false when it waits for a retry. */
async function send(deps: NotifierDeps, settings: NotifierSettings, apps: Apps, notice: notices.NoticeRow): Promise<boolean> {
  const { db, logger } = deps;
  const startedAt = settings.now();
  if (!(await leaseOutboxRow(db, 'github_notices', notice.id, iso(startedAt), iso(startedAt + settings.leaseMs)))) return false;
  const about = { notice: notice.id, revision: notice.revision_id, deployment: notice.deployment_id, status: notice.status };
  let what = notice.kind === 'preview_refused' ? 'why a preview was refused' : 'about a revision';
  let steps = notice.steps_done;
  try {
    const plan = notice.kind === 'preview_refused' ? await refusalPlan(deps, apps, notice) : await revisionPlan(deps, settings, apps, notice);
    if (typeof plan === 'string') {
      logger.debug({ ...about, why: plan }, 'a GitHub notice was dropped');
      await notices.deleteGitHubNotice(db, notice.id);
      return true;
    }
    what = plan.what;
    await plan.run(steps, async (done) => {
      steps = done;
      await notices.updateGitHubNotice(db, notice.id, { steps_done: steps });
    });
    await notices.deleteGitHubNotice(db, notice.id);
    return true;
  } catch (error) {
    // Whatever failed once the notice was leased (GitHub, the database, reading the
    // integration) is retried with the backoff: left leased, the notice and every later one of
    // its revision would wait for the lease to run out (minutes).
    const finishedAt = settings.now();
    const attempts = notice.attempts + 1;
    const retryAt = finishedAt + retryDelayMs(attempts, settings.firstRetryDelayMs, settings.random);
    const message = safeMessage(error);
    if (retryAt - Date.parse(notice.created_at) > settings.retryWindowMs) {
      logger.warn({ ...about, attempts, error: message }, `gave up telling GitHub ${what}`);
      await notices.deleteGitHubNotice(db, notice.id);
      return true;
    }
    logger.warn({ ...about, attempts, error: message }, `telling GitHub ${what} failed; it is retried`);
    await notices.updateGitHubNotice(db, notice.id, {
      steps_done: steps,
      attempts,
      next_attempt_at: iso(retryAt),
      leased_until: null,
      last_error: message.slice(0, 1000),
    });
    return false;
  }
}

/** A revision's status change: its GitHub deployment's status, then its commit status. */
async function revisionPlan(deps: NotifierDeps, settings: NotifierSettings, apps: Apps, notice: notices.NoticeRow): Promise<Plan | string> {
  const { db } = deps;
  const target = await targetOf(deps, apps, notice);
  if (typeof target === 'string') return target;
  const { app, repository, sha, deployment, revision } = target;
  const told = notice.status ? commitNotice(notice.status, notice.message) : undefined;
  if (!told) return 'the status is not told';
  const dashboardUrl = deps.publicUrl ? `${deps.publicUrl.replace(/\/+$/, '')}/deployments/${deployment.id}/revisions/${revision.id}` : undefined;
  // A preview's status is what a reviewer clicks to try the pull request: once it serves, it links there.
  const previewUrl = deployment.isPreview && notice.status === 'DEPLOYED' ? (revision.url ?? deployment.url) : null;
  const targetUrl = previewUrl ?? dashboardUrl;
  return {
    what: 'about a revision',
    async run(stepsDone, done) {
      if (!(stepsDone & DEPLOYMENT_STATUS_DONE)) {
        let githubId = await notices.findGitHubDeployment(db, revision.id);
        if (githubId === undefined) {
          githubId = String(await app.createDeployment(repository, sha, deployment.name, `Berth revision ${revision.seq} of ${deployment.name}`));
          await notices.saveGitHubDeployment(db, revision.id, githubId, iso(settings.now()));
        }
        await app.createDeploymentStatus(repository, Number(githubId), {
          state: told.deploymentState,
          description: told.description,
          ...(targetUrl ? { logUrl: targetUrl } : {}),
          ...(notice.status === 'DEPLOYED' && (revision.url ?? deployment.url) ? { environmentUrl: (revision.url ?? deployment.url) as string } : {}),
        });
        await done(stepsDone | DEPLOYMENT_STATUS_DONE);
      }
      await app.createCommitStatus(repository, sha, {
        state: told.state,
        context: statusContext(deployment.name),
        description: told.description,
        ...(targetUrl ? { targetUrl } : {}),
      });
    },
  };
}

/** A pull request refused a preview: one `failure` status on its head commit, in the parent's preview context. */
async function refusalPlan(deps: NotifierDeps, apps: Apps, notice: notices.NoticeRow): Promise<Plan | string> {
  const parent = await findDeploymentById(deps.db, notice.deployment_id);
  if (!parent) return 'the deployment is gone';
  if (!notice.commit_sha || !notice.message) return 'the refusal names no commit';
  const found = await repositoryOf(deps, apps, parent.source_config);
  if (typeof found === 'string') return found;
  const { app, repository } = found;
  const sha = notice.commit_sha;
  const description = describe(notice.message);
  return {
    what: 'why a preview was refused',
    run: () => app.createCommitStatus(repository, sha, { state: 'failure', context: `${statusContext(parent.name)}/preview`, description }),
  };
}

interface Target {
  app: GitHubAppProvider;
  repository: RepositoryName;
  sha: string;
  deployment: { id: string; name: string; url: string | null; isPreview: boolean };
  revision: { id: string; seq: number; url: string | null };
}

/** Where a revision's notice goes, or why it goes nowhere. */
async function targetOf(deps: NotifierDeps, apps: Apps, notice: notices.NoticeRow): Promise<Target | string> {
  const revision = notice.revision_id ? await findRevisionById(deps.db, notice.revision_id) : undefined;
  if (!revision) return 'the revision is gone';
  const deployment = await findDeploymentById(deps.db, notice.deployment_id);
  if (!deployment) return 'the deployment is gone';
  // A revision that does not name its commit learns it from its build; before that (or when its build never ran) there is nothing to mark.
  const sha = revision.source_revision_config.repo_commit_sha ?? revision.build?.commit_sha ?? null;
  if (!sha) return 'the revision has no commit yet';
  const found = await repositoryOf(deps, apps, deployment.source_config);
  if (typeof found === 'string') return found;
  return {
    ...found,
    sha,
    deployment: { id: deployment.id, name: deployment.name, url: deployment.url, isPreview: deployment.parent_deployment_id !== null },
    revision: { id: revision.id, seq: revision.seq, url: revision.url },
  };
}

/** A deployment's GitHub repository and the App of its integration (kept while the integration is unchanged), or why there is none. */
async function repositoryOf(
  deps: NotifierDeps,
  apps: Apps,
  sourceConfig: { integration_id?: string | null; repo_url?: string | null },
): Promise<{ app: GitHubAppProvider; repository: RepositoryName } | string> {
  const { integration_id: integrationId, repo_url: repoUrl } = sourceConfig;
  const repository = repoUrl ? gitHubRepository(repoUrl) : undefined;
  if (!integrationId || !repository) return 'the deployment names no GitHub repository';
  const integration = await findIntegrationById(deps.db, integrationId);
  if (!integration || integration.provider !== 'github') return 'the integration is gone';
  let cached = apps.get(integration.id);
  if (!cached || cached.updatedAt !== integration.updated_at) {
    const app = gitHubAppOf({ ...integration, credentials: decryptCredentials(deps.encryptor, integration.id, integration.credentials_encrypted) });
    if (!app) return 'the integration is not a GitHub App';
    cached = { updatedAt: integration.updated_at, app };
    apps.set(integration.id, cached);
  }
  return { app: cached.app, repository: { owner: repository.owner, repo: repository.name } };
}

/** Only a CodehostError's message is known to hold no credentials; anything else is named, not quoted. */
function safeMessage(error: unknown): string {
  if (error instanceof CodehostError) return error.message;
  return error instanceof Error ? `${error.name}: ${error.message.replace(/(?:token|bearer)\s+\S+/gi, '[redacted]')}` : String(error);
}
