import { insertBerthAuditRow } from '../store/repositories/audit.js';
import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import { type GitHubPullRequest, pushMatchesRepository } from '../codehost/index.js';
import type { PushOutcome } from '../contract/builds.js';
import { alreadyHeadingTo, LIVE_REVISION_STATUSES, pushedCommit } from '../domain/build-on-push.js';
import { pushIgnoredMessage } from '../domain/pins.js';
import {
  branchMatches,
  decidePullRequest,
  isIdle,
  type PreviewOrigin,
  type PreviewSettings,
  previewName,
  previewSecrets,
  type PullRequestDecision,
} from '../domain/previews.js';
import { announce, announceListener, announceWebhooks, recordLog, recordPushIgnored } from '../events/recorder.js';
import { moveDeployment } from '../lifecycle/deployments.js';
import { type Executor, nowIso } from '../store/database.js';
import * as deployments from '../store/repositories/deployments.js';
import { insertPreviewRefusalNotice } from '../store/repositories/github-notices.js';
import * as previews from '../store/repositories/previews.js';
import * as revisions from '../store/repositories/revisions.js';
import type { DeploymentRecords } from './deployment-records.js';
import type { ServiceDeps } from './index.js';
import { appendRevision, insertWithFirstRevision } from './revision-writer.js';
import { outboxEvent } from './webhooks.js';

export type PreviewOutcome = NonNullable<Static<typeof PushOutcome>['previews']>[number];

export interface PreviewOptions {
  records: DeploymentRecords;
  revisionsKept: number;
  /** BERTH_PREVIEWS_ALLOW_FORKS: pull requests from forks may get previews where a deployment allows them too. */
  allowForks: boolean;
}

/** What one transaction did, to announce after commit. */
interface Done {
  outcome: PreviewOutcome;
  wake?: string;
  announced?: string;
  listenerId?: string | null;
  /** A webhook event or a GitHub notice was queued: the senders are woken after commit. */
  outboxed?: boolean;
}

/**
 * Preview deployments (docs/previews.md): a deployment of its own per pull request
 * (`github`) or matching branch (`git`) of a parent with previews on, built from the head
 * with the parent's configuration and only the named secrets, updated on each new commit,
 * removed when the pull request closes, the branch goes or it is idle too long. Each
 * change is decided under the parent's row lock (so concurrent deliveries make one
 * preview), recorded in the audit log with Berth as the actor and put in the outbox.
 */
export function createPreviewService({ db, bus }: ServiceDeps, options: PreviewOptions) {
  const { records, revisionsKept, allowForks } = options;

  function afterCommit(done: Done): PreviewOutcome {
    if (done.wake) bus.publish({ topic: 'work', deploymentId: done.wake });
    if (done.announced) announce(bus, done.announced);
    if (done.listenerId) announceListener(bus, done.listenerId);
    if (done.outboxed) announceWebhooks(bus);
    return done.outcome;
  }

  async function create(trx: Executor, parent: deployments.DeploymentRecord, settings: PreviewSettings, origin: PreviewOrigin): Promise<Done> {
    const now = nowIso();
    const state = await records.state(trx, await records.withLatest(trx, parent));
    let name = previewName(parent.name, origin);
    if (await previews.nameTaken(trx, parent.workspace_id, name)) name = previewName(parent.name, origin, true);
    const subject = origin.kind === 'pull_request' ? `pull request #${origin.number}` : `branch ${origin.branch}`;
    const secrets = previewSecrets(state.secrets, settings, origin);
    const config = { ...state.revisionConfig, repo_ref: origin.head_sha, repo_commit_sha: origin.head_sha };
    const { deployment: preview, revision } = await insertWithFirstRevision(
      trx,
      records,
      {
        id: randomUUID(),
        workspace_id: parent.workspace_id,
        name,
        display_name: `Preview of ${parent.name}: ${subject}`.slice(0, 256),
        source: parent.source,
        source_config: { ...parent.source_config, build_on_push: false, custom_url: null, deployment_type: 'dev' },
        deployment_type: 'dev',
        listener_id: parent.listener_id,
        image_version: parent.image_version,
        created_at: now,
        preview: { parentId: parent.id, origin },
      },
      { config, resourceSpec: state.resourceSpec, secrets },
    );
    await recordLog(trx, {
      deploymentId: preview.id,
      revisionId: revision.id,
      logType: 'build',
      level: 'INFO',
      message: `Preview of ${subject} at ${origin.head_sha}.`,
    });
    await insertBerthAuditRow(
      trx,
      { workspaceId: parent.workspace_id },
      {
        action: 'preview.create',
        target: { type: 'deployment', id: preview.id, name },
        changedFields: ['parent_deployment_id', 'preview'],
        secretNames: secrets.map((secret) => secret.name).sort(),
        reason: `preview of ${subject} at ${origin.head_sha.slice(0, 12)}`,
      },
    );
    const outboxed = await outboxEvent(trx, parent.workspace_id, 'preview.created', eventPayload(preview, parent, origin));
    return { outcome: { parent_deployment_id: parent.id, action: 'created', deployment_id: preview.id, reason: null }, wake: preview.id, outboxed };
  }

  /** A new head for a preview: one revision of it, unless it is heading there already, or pinned (then a recorded push). */
  async function update(trx: Executor, parent: deployments.DeploymentRecord, found: deployments.DeploymentRecord, origin: PreviewOrigin): Promise<Done> {
    const now = nowIso();
    const preview = await deployments.lockDeploymentAsIs(trx, found.workspace_id, found.id);
    const outcome = (action: PreviewOutcome['action'], reason: string | null): PreviewOutcome => ({
      parent_deployment_id: parent.id,
      action,
      deployment_id: found.id,
      reason,
    });
    if (!preview || preview.status === 'AWAITING_DELETE') return { outcome: outcome('ignored', 'the preview is being removed') };
    await previews.touchPreview(trx, preview.id, origin, now);
    const reason = `new commit ${origin.head_sha.slice(0, 12)}`;
    if (preview.pinned_revision_id !== null) {
      const message = pushIgnoredMessage(origin.head_sha, reason, preview.pinned_revision_id);
      await recordPushIgnored(trx, { deploymentId: preview.id, pinnedRevisionId: preview.pinned_revision_id, commit: origin.head_sha, message });
      return { outcome: outcome('ignored', 'the preview is pinned'), announced: preview.id };
    }
    const [newestLive] = await revisions.listRevisions(trx, preview.id, { statuses: [...LIVE_REVISION_STATUSES] }, { limit: 1, offset: 0 });
    if (alreadyHeadingTo(newestLive, origin.head_sha)) return { outcome: outcome('ignored', 'the preview already builds this commit') };
    const state = await records.state(trx, await records.withLatest(trx, preview));
    const config = { ...state.revisionConfig, repo_ref: origin.head_sha, repo_commit_sha: origin.head_sha };
    const revision = await appendRevision(
      trx,
      records,
      preview,
      { config, resourceSpec: state.resourceSpec, secrets: state.secrets },
      { now, keep: revisionsKept },
    );
    await recordLog(trx, { deploymentId: preview.id, revisionId: revision.id, logType: 'build', level: 'INFO', message: `Preview: ${reason}.` });
    await insertBerthAuditRow(
      trx,
      { workspaceId: preview.workspace_id },
      { action: 'preview.update', target: { type: 'deployment', id: preview.id, name: preview.name }, changedFields: ['preview'], reason },
    );
    const outboxed = await outboxEvent(trx, preview.workspace_id, 'preview.updated', { ...eventPayload(preview, parent, origin), revision_id: revision.id });
    return { outcome: outcome('updated', null), wake: preview.id, outboxed };
  }

  /** Marks a preview for deletion (the engine removes it as any deleted deployment) and frees its key. */
  async function remove(trx: Executor, preview: deployments.DeploymentRecord, why: string): Promise<Done> {
    const moved = await moveDeployment({ db, bus }, preview.id, 'AWAITING_DELETE', { fence: { kind: 'api' } }, trx);
    const outcome: PreviewOutcome = { parent_deployment_id: preview.parent_deployment_id ?? '', action: 'removed', deployment_id: preview.id, reason: why };
    if (!moved) return { outcome: { ...outcome, action: 'ignored', reason: 'the preview is being removed already' } };
    await previews.releasePreviewKey(trx, preview.id);
    await insertBerthAuditRow(
      trx,
      { workspaceId: preview.workspace_id },
      { action: 'preview.delete', target: { type: 'deployment', id: preview.id, name: preview.name }, reason: why },
    );
    const outboxed = await outboxEvent(trx, preview.workspace_id, 'preview.deleted', {
      deployment: { id: preview.id, name: preview.name },
      parent_deployment_id: preview.parent_deployment_id,
      reason: why,
    });
    return { outcome, wake: preview.id, announced: preview.id, listenerId: preview.listener_id, outboxed };
  }

  /** Runs `decide` on the parent under its row lock; nothing for a parent gone, being deleted or with previews off. */
  async function underParentLock(
    parent: deployments.DeploymentRecord,
    decide: (trx: Executor, locked: deployments.DeploymentRecord, settings: PreviewSettings) => Promise<Done>,
  ): Promise<Done> {
    return db.transaction().execute(async (trx) => {
      const locked = await deployments.lockDeploymentAsIs(trx, parent.workspace_id, parent.id);
      const ignored = (reason: string): Done => ({ outcome: { parent_deployment_id: parent.id, action: 'ignored', deployment_id: null, reason } });
      if (!locked || locked.status === 'AWAITING_DELETE') return ignored('the deployment is being deleted');
      if (!locked.preview_settings) return ignored('previews are off');
      return decide(trx, locked, locked.preview_settings);
    });
  }

  const liveCount = async (trx: Executor, parentId: string) =>
    (await previews.previewsOf(trx, parentId)).filter((preview) => preview.status !== 'AWAITING_DELETE').length;

  /**
   * A pull request refused a preview: GitHub is told why on its head commit through the
   * retried outbox (github_notices), queued in the transaction of the decision.
   */
  async function refuse(trx: Executor, parent: deployments.DeploymentRecord, sha: string, why: string): Promise<Done> {
    const outcome: PreviewOutcome = { parent_deployment_id: parent.id, action: 'refused', deployment_id: null, reason: why };
    if (!pushedCommit(sha)) return { outcome };
    const queued = await insertPreviewRefusalNotice(trx, { id: randomUUID(), parentDeploymentId: parent.id, commitSha: sha, reason: why }, nowIso());
    return { outcome, outboxed: queued };
  }

  return {
    /** A `pull_request` delivery of a `github` integration: what each parent of that repository with previews on did. */
    async onPullRequest(integrationId: string, pr: GitHubPullRequest): Promise<PreviewOutcome[]> {
      const parents = (await previews.previewParents(db, integrationId)).filter(
        (parent) => parent.source_config.repo_url && pushMatchesRepository(pr, parent.source_config.repo_url),
      );
      const origin: PreviewOrigin = { kind: 'pull_request', number: pr.number, head_ref: pr.headRef, head_sha: pr.headSha.toLowerCase(), fork: pr.fork };
      const outcomes: PreviewOutcome[] = [];
      for (const parent of parents) {
        const done = await underParentLock(parent, async (trx, locked, settings) => {
          const found = await previews.findLivePreview(trx, locked.id, origin);
          const decision: PullRequestDecision = decidePullRequest(
            settings,
            { ...pr, headSha: origin.head_sha },
            {
              exists: found !== undefined,
              live: await liveCount(trx, locked.id),
              operatorAllowsForks: allowForks,
            },
          );
          switch (decision.kind) {
            case 'remove':
              return remove(trx, found as deployments.DeploymentRecord, decision.why);
            case 'upsert':
              return found ? update(trx, locked, found, origin) : create(trx, locked, settings, origin);
            case 'refuse':
              return refuse(trx, locked, origin.head_sha, decision.why);
            case 'ignore':
              return { outcome: { parent_deployment_id: locked.id, action: 'ignored', deployment_id: found?.id ?? null, reason: decision.why } };
          }
        });
        outcomes.push(afterCommit(done));
      }
      return outcomes;
    },

    /**
     * The branch heads the git poller saw in one repository of a `git` integration: previews
     * of matching branches are made or moved to their new head, and removed when their
     * branch is gone. Answers how many previews changed.
     */
    async onBranchHeads(integrationId: string, repositoryMatches: (repoUrl: string) => boolean, heads: Record<string, string>): Promise<number> {
      let changed = 0;
      for (const parent of await previews.previewParents(db, integrationId)) {
        if (!parent.source_config.repo_url || !repositoryMatches(parent.source_config.repo_url)) continue;
        const pattern = parent.preview_settings?.branch_pattern;
        if (!pattern) continue;
        const enabled = parent.preview_settings?.enabled === true;
        for (const preview of await previews.previewsOf(db, parent.id)) {
          const origin = preview.preview_origin;
          if (preview.status === 'AWAITING_DELETE' || origin?.kind !== 'branch' || heads[origin.branch]) continue;
          const done = await underParentLock(parent, (trx) => remove(trx, preview, `branch ${origin.branch} is gone`));
          if (afterCommit(done).action === 'removed') changed += 1;
        }
        for (const [branch, sha] of Object.entries(heads)) {
          if (!enabled || !branchMatches(pattern, branch) || !pushedCommit(sha)) continue;
          const origin: PreviewOrigin = { kind: 'branch', branch, head_sha: sha.toLowerCase() };
          const done = await underParentLock(parent, async (trx, locked, settings) => {
            const found = await previews.findLivePreview(trx, locked.id, origin);
            const ignored = (reason: string): Done => ({
              outcome: { parent_deployment_id: locked.id, action: 'ignored', deployment_id: found?.id ?? null, reason },
            });
            if (!settings.enabled || settings.branch_pattern === null || !branchMatches(settings.branch_pattern, branch)) return ignored('previews are off');
            if (found) return found.preview_origin?.head_sha === origin.head_sha ? ignored('no new commit') : update(trx, locked, found, origin);
            if ((await liveCount(trx, locked.id)) >= settings.max_previews) return ignored(`the maximum of ${settings.max_previews} previews is reached`);
            return create(trx, locked, settings, origin);
          });
          const { action } = afterCommit(done);
          if (action === 'created' || action === 'updated') changed += 1;
        }
      }
      return changed;
    },

    /**
     * Removes previews with no new commit for longer than their parent's idle time, and
     * those whose parent is gone or being deleted; answers how many.
     */
    async removeIdle(now = Date.now()): Promise<number> {
      let removed = 0;
      for (const { preview, idleMinutes, orphaned } of await previews.livePreviews(db)) {
        if (orphaned) {
          const done = await db.transaction().execute((trx) => remove(trx, preview, 'its parent deployment was deleted'));
          if (afterCommit(done).action === 'removed') removed += 1;
          continue;
        }
        if (idleMinutes === null || !isIdle(preview.preview_active_at ?? preview.created_at, idleMinutes, now)) continue;
        const parent = await deployments.findDeploymentById(db, preview.parent_deployment_id as string);
        if (!parent) continue;
        const done = await underParentLock(parent, async (trx) => {
          // Looked at again under the lock: a new commit may have come in meanwhile.
          const current = await deployments.findDeploymentById(trx, preview.id);
          if (!current || !isIdle(current.preview_active_at ?? current.created_at, idleMinutes, now)) {
            return { outcome: { parent_deployment_id: parent.id, action: 'ignored', deployment_id: preview.id, reason: 'active again' } };
          }
          return remove(trx, current, `idle for more than ${idleMinutes} minutes`);
        });
        if (afterCommit(done).action === 'removed') removed += 1;
      }
      return removed;
    },
  };
}

export type PreviewService = ReturnType<typeof createPreviewService>;

/** What receivers of `preview.*` events see: names and ids, never a secret. */
function eventPayload(preview: deployments.DeploymentRecord, parent: deployments.DeploymentRecord, origin: PreviewOrigin) {
  return {
    deployment: { id: preview.id, name: preview.name },
    parent_deployment: { id: parent.id, name: parent.name },
    pull_request_number: origin.kind === 'pull_request' ? origin.number : null,
    branch: origin.kind === 'pull_request' ? origin.head_ref : origin.branch,
    head_sha: origin.head_sha,
  };
}
