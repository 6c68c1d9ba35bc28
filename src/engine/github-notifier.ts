import type { Logger } from 'pino';
import { CodehostError, gitHubAppOf, type GitHubAppProvider, type RepositoryName } from '../codehost/index.js';
import { commitNotice, gitHubRepository, statusContext } from '../domain/commit-status.js';
import { FIRST_RETRY_DELAY_MS, RETRY_WINDOW_MS, retryDelayMs } from '../domain/webhooks.js';
import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import { decryptCredentials } from '../security/integration-credentials.js';
import type { Db } from '../store/database.js';
import { findDeploymentById } from '../store/repositories/deployments.js';
import * as notices from '../store/repositories/github-notices.js';
import { findIntegrationById } from '../store/repositories/integrations.js';
import { leaseOutboxRow, nextOutboxDueAt } from '../store/repositories/outbox.js';
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
const COMMIT_STATUS_DONE = 2;

/**
 * Tells GitHub how revisions of deployments on `github` integrations fare (docs/webhooks.md,
 * "Commit statuses and GitHub deployments"): works off `github_notices` with the webhook
 * deliverer's loop and backoff. A failing GitHub never touches the revision: its notice is
 * retried, and logged without credentials.
 */
export function startGitHubNotifier(deps: NotifierDeps, overrides: Partial<NotifierSettings> = {}): { stop(): Promise<void> } {
  const settings = { ...DEFAULT_NOTIFIER_SETTINGS, ...overrides };
  const apps = new Map<string, { updatedAt: string; app: GitHubAppProvider }>();
  return startOutboxLoop({
    pass: () => notifyPass(deps, settings, apps),
    nextDueAt: () => nextOutboxDueAt(deps.db, 'github_notices'),
    bus: deps.bus,
    logger: deps.logger,
    what: 'notifying GitHub',
    sweepMs: settings.sweepMs,
    now: settings.now,
  });
}

type Apps = Map<string, { updatedAt: string; app: GitHubAppProvider }>;

async function notifyPass(deps: NotifierDeps, settings: NotifierSettings, apps: Apps): Promise<void> {
  for (;;) {
    const due = await notices.dueGitHubNotices(deps.db, iso(settings.now()), settings.concurrency);
    if (due.length === 0) return;
    const results = await Promise.all(
      due.map((notice) =>
        send(deps, settings, apps, notice).catch((error: unknown) => {
          deps.logger.warn({ notice: notice.id, revision: notice.revision_id, error: safeMessage(error) }, 'a GitHub notice could not be attempted');
          return false;
        }),
      ),
    );
    // Notices that were all put off (taken by another sender, or waiting to retry) end the pass.
    if (!results.some(Boolean)) return;
  }
}

/** Sends one notice: true when it is done with (sent or dropped), false when it waits for a retry. */
async function send(deps: NotifierDeps, settings: NotifierSettings, apps: Apps, notice: notices.NoticeRow): Promise<boolean> {
  const { db, logger } = deps;
  const startedAt = settings.now();
  if (!(await leaseOutboxRow(db, 'github_notices', notice.id, iso(startedAt), iso(startedAt + settings.leaseMs)))) return false;
  const target = await targetOf(deps, apps, notice);
  if (typeof target === 'string') {
    logger.debug({ notice: notice.id, revision: notice.revision_id, why: target }, 'a GitHub notice was dropped');
    await notices.deleteGitHubNotice(db, notice.id);
    return true;
  }
  const { app, repository, sha, deployment, revision } = target;
  const told = commitNotice(notice.status, notice.message);
  if (!told) {
    await notices.deleteGitHubNotice(db, notice.id);
    return true;
  }
  const dashboardUrl = deps.publicUrl ? `${deps.publicUrl.replace(/\/+$/, '')}/deployments/${deployment.id}/revisions/${revision.id}` : undefined;
  // A preview's status is what a reviewer clicks to try the pull request: once it serves, it links there.
  const previewUrl = deployment.isPreview && notice.status === 'DEPLOYED' ? (revision.url ?? deployment.url) : null;
  const targetUrl = previewUrl ?? dashboardUrl;
  let steps = notice.steps_done;
  try {
    if (!(steps & DEPLOYMENT_STATUS_DONE)) {
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
      steps |= DEPLOYMENT_STATUS_DONE;
      await notices.updateGitHubNotice(db, notice.id, { steps_done: steps });
    }
    if (!(steps & COMMIT_STATUS_DONE)) {
      await app.createCommitStatus(repository, sha, {
        state: told.state,
        context: statusContext(deployment.name),
        description: told.description,
        ...(targetUrl ? { targetUrl } : {}),
      });
    }
    await notices.deleteGitHubNotice(db, notice.id);
    return true;
  } catch (error) {
    const finishedAt = settings.now();
    const attempts = notice.attempts + 1;
    const retryAt = finishedAt + retryDelayMs(attempts, settings.firstRetryDelayMs, settings.random);
    const message = safeMessage(error);
    if (retryAt - Date.parse(notice.created_at) > settings.retryWindowMs) {
      logger.warn(
        { notice: notice.id, revision: notice.revision_id, status: notice.status, attempts, error: message },
        'gave up telling GitHub about a revision',
      );
      await notices.deleteGitHubNotice(db, notice.id);
      return true;
    }
    logger.warn(
      { notice: notice.id, revision: notice.revision_id, status: notice.status, attempts, error: message },
      'telling GitHub about a revision failed; it is retried',
    );
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

interface Target {
  app: GitHubAppProvider;
  repository: RepositoryName;
  sha: string;
  deployment: { id: string; name: string; url: string | null; isPreview: boolean };
  revision: { id: string; seq: number; url: string | null };
}

/** Where a notice goes, or why it goes nowhere. */
async function targetOf(deps: NotifierDeps, apps: Apps, notice: notices.NoticeRow): Promise<Target | string> {
  const revision = await findRevisionById(deps.db, notice.revision_id);
  if (!revision) return 'the revision is gone';
  const deployment = await findDeploymentById(deps.db, notice.deployment_id);
  if (!deployment) return 'the deployment is gone';
  // A revision that does not name its commit learns it from its build; before that (or when its build never ran) there is nothing to mark.
  const sha = revision.source_revision_config.repo_commit_sha ?? revision.build?.commit_sha ?? null;
  if (!sha) return 'the revision has no commit yet';
  const { integration_id: integrationId, repo_url: repoUrl } = deployment.source_config;
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
  return {
    app: cached.app,
    repository: { owner: repository.owner, repo: repository.name },
    sha,
    deployment: { id: deployment.id, name: deployment.name, url: deployment.url, isPreview: deployment.parent_deployment_id !== null },
    revision: { id: revision.id, seq: revision.seq, url: revision.url },
  };
}

/** Only a CodehostError's message is known to hold no credentials; anything else is named, not quoted. */
function safeMessage(error: unknown): string {
  if (error instanceof CodehostError) return error.message;
  return error instanceof Error ? `${error.name}: ${error.message.replace(/(?:token|bearer)\s+\S+/gi, '[redacted]')}` : String(error);
}
