import type { Logger } from 'pino';
import {
  type GitHubPullRequest,
  type GitHubPush,
  type GitSettings,
  pushMatchesRepository,
  readGitHubDelivery,
  remoteBranchHeads,
  requireGitHubSignatureHeader,
  sameRepository,
  WebhookError,
} from '../codehost/index.js';
import type { PushOutcomeView } from '../contract/builds.js';
import { pushedCommit } from '../domain/build-on-push.js';
import { fail } from '../domain/errors.js';
import { integrationNotFound } from '../domain/integrations.js';
import { decryptCredentials } from '../security/integration-credentials.js';
import { type Db, nowIso } from '../store/database.js';
import { type DeploymentWithLatest, deploymentsBuildingOnPush } from '../store/repositories/deployments.js';
import * as integrations from '../store/repositories/integrations.js';
import type { Encryptor } from '../security/encryption.js';
import type { CodehostOptions } from './integrations.js';
import type { PreviewService } from './previews.js';
import type { RevisionService } from './revisions.js';
import { previewParents } from '../store/repositories/previews.js';

/** The integration a webhook delivery names, found (and its secret read) before the body is. */
export interface WebhookTarget {
  integrationId: string;
  workspaceId: string;
  secret: string;
}

/**
 * Build on push: a push to a branch makes a new revision of every deployment that tracks
 * that repository and branch with `build_on_push`. GitHub tells Berth through its webhook;
 * for `git` integrations a poller asks the remotes. Each push acts once, whichever
 * process or replica hears of it (deliveries are recorded by id and by content, and a
 * poller's "push" is the branch's new commit); a push of a commit a deployment is already
 * heading to makes no revision of it (alreadyHeadingTo); and the engine's latest-wins
 * queue keeps only the newest build.
 */
export function createPushBuildService({
  db,
  encryptor,
  revisions,
  previews,
  codehost,
}: {
  db: Db;
  encryptor: Encryptor;
  revisions: RevisionService;
  previews: PreviewService;
  codehost: CodehostOptions;
}) {
  async function buildDeployments(deployments: DeploymentWithLatest[], reason: string, sha: string): Promise<string[]> {
    const created: string[] = [];
    const commit = pushedCommit(sha);
    for (const { deployment } of deployments) {
      const revision = await revisions.rebuild(deployment, reason, commit, sha);
      if (revision) created.push(revision);
    }
    return created;
  }

  /** Deployments of the repository whose latest revision builds `branch`. */
  const tracking = (deployments: DeploymentWithLatest[], branch: string, matches: (repoUrl: string) => boolean) =>
    deployments.filter(
      ({ deployment, latest }) =>
        deployment.source_config.repo_url && matches(deployment.source_config.repo_url) && latest?.source_revision_config.repo_ref === branch,
    );

  /**
   * A pull request opened, updated, labelled, reopened or closed: previews of every deployment
   * of its repository with previews on (services/previews.ts). Acted on once per delivery
   * id and once per signed content (the same event replayed under a new id).
   */
  async function pullRequest(target: WebhookTarget, deliveryId: string, pr: GitHubPullRequest): Promise<PushOutcomeView> {
    if (!(await integrations.findIntegrationById(db, target.integrationId))) throw integrationNotFound(target.integrationId);
    const firstDelivery = await integrations.recordDelivery(db, target.integrationId, `github:${deliveryId}`, nowIso());
    const key = `github-pr:${pr.repository.id}:${pr.number}:${pr.action}:${pr.headSha}:${[...pr.labels].sort().join(',')}`;
    if (!firstDelivery || !(await integrations.recordDelivery(db, target.integrationId, key, nowIso()))) {
      return { outcome: 'duplicate', revision_ids: [] };
    }
    const outcomes = await previews.onPullRequest(target.integrationId, pr);
    const acted = outcomes.some((outcome) => outcome.action !== 'ignored');
    return { outcome: acted ? 'built' : 'ignored', revision_ids: [], previews: outcomes };
  }

  return {
    /**
     * What can be checked of a webhook delivery before its body is read: the integration its
     * URL names (404 unknown, 400 when it takes no webhooks) and a signature header (401).
     * The answer, secret included, stays with the caller until the body has arrived.
     */
    async admitDelivery(integrationId: string, headers: Record<string, string | string[] | undefined>): Promise<WebhookTarget> {
      const integration = await integrations.findIntegrationById(db, integrationId);
      if (!integration) throw integrationNotFound(integrationId);
      const secret = decryptCredentials(encryptor, integration.id, integration.credentials_encrypted).github?.webhookSecret;
      if (integration.provider !== 'github' || !secret) {
        throw fail('webhook_not_accepted', `Integration ID ${integrationId} takes no webhooks: only 'github' integrations with a webhook_secret do.`);
      }
      try {
        requireGitHubSignatureHeader(headers);
      } catch (error) {
        if (!(error instanceof WebhookError)) throw error;
        throw fail('webhook_signature_invalid', `Webhook delivery refused: ${error.message}.`);
      }
      return { integrationId: integration.id, workspaceId: integration.workspace_id, secret };
    },

    /** A delivery from a GitHub App's webhook, checked against the integration's webhook secret over its raw bytes. */
    async githubDelivery(target: WebhookTarget, headers: Record<string, string | string[] | undefined>, rawBody: Buffer): Promise<PushOutcomeView> {
      let delivery;
      try {
        delivery = readGitHubDelivery({ headers, rawBody, secret: target.secret });
      } catch (error) {
        if (!(error instanceof WebhookError)) throw error;
        if (error.failure === 'payload-invalid') throw fail('webhook_payload_invalid', `Webhook delivery refused: ${error.message}.`);
        throw fail('webhook_signature_invalid', `Webhook delivery refused: ${error.message}.`);
      }
      if (delivery.event === 'pull_request') return pullRequest(target, delivery.deliveryId, delivery.pullRequest);
      if (delivery.event !== 'push' || !delivery.push.branch || delivery.push.deleted) return { outcome: 'ignored', revision_ids: [] };
      // The integration was found before the body arrived; it may have been deleted meanwhile.
      if (!(await integrations.findIntegrationById(db, target.integrationId))) throw integrationNotFound(target.integrationId);
      const { push } = delivery;
      // The delivery id is not signed: a captured delivery replayed under a new id is the
      // same signed push, recognised by what it says (pushKey) and acted on once too.
      const firstDelivery = await integrations.recordDelivery(db, target.integrationId, `github:${delivery.deliveryId}`, nowIso());
      if (!firstDelivery || !(await integrations.recordDelivery(db, target.integrationId, pushKey(push), nowIso()))) {
        return { outcome: 'duplicate', revision_ids: [] };
      }
      const deployments = tracking(await deploymentsBuildingOnPush(db, target.integrationId), push.branch as string, (url) => pushMatchesRepository(push, url));
      return { outcome: 'built', revision_ids: await buildDeployments(deployments, `push of ${push.after.slice(0, 12)} to ${push.branch}`, push.after) };
    },

    /**
     * Asks every `git` integration's remotes for their branch heads and builds deployments
     * whose branch moved. The first look at a repository only remembers what it saw.
     */
    async pollGitIntegrations(logger: Logger, signal: AbortSignal): Promise<number> {
      let built = 0;
      for (const integration of await integrations.listAllIntegrations(db, 'git')) {
        const deployments = await deploymentsBuildingOnPush(db, integration.id);
        const parents = await previewParents(db, integration.id);
        if (deployments.length === 0 && parents.length === 0) continue;
        const settings = integration.settings as unknown as GitSettings;
        const credentials = decryptCredentials(encryptor, integration.id, integration.credentials_encrypted).git;
        for (const url of settings.repositories) {
          const theirs = deployments.filter(({ deployment }) => deployment.source_config.repo_url && sameRepository(deployment.source_config.repo_url, url));
          const previewing = parents.some((parent) => parent.source_config.repo_url && sameRepository(parent.source_config.repo_url, url));
          if (theirs.length === 0 && !previewing) continue;
          try {
            const own = credentials?.perRepository?.[url];
            const auth = own
              ? { kind: 'basic' as const, ...own }
              : credentials?.sshPrivateKey
                ? { kind: 'ssh-key' as const, privateKey: credentials.sshPrivateKey }
                : credentials?.password && settings.username
                  ? { kind: 'basic' as const, username: settings.username, password: credentials.password }
                  : undefined;
            const heads = await remoteBranchHeads(url, auth, signal, {
              knownHostsFile: codehost.knownHostsFile,
              allowLocal: codehost.allowLocal,
              timeoutMs: codehost.gitTimeoutMs,
            });
            const seen = await integrations.branchHeads(db, integration.id, url);
            const firstLook = Object.keys(seen).length === 0;
            await integrations.saveBranchHeads(db, integration.id, url, heads, nowIso());
            // Previews follow the heads as they are, first look included: a branch pushed
            // before previews were turned on gets its preview too.
            if (previewing) built += await previews.onBranchHeads(integration.id, (repoUrl) => sameRepository(repoUrl, url), heads);
            if (firstLook) continue;
            for (const [branch, sha] of Object.entries(heads)) {
              if (seen[branch] === sha) continue;
              // Several pollers (replicas) may see the same move: the first to record it builds.
              if (!(await integrations.recordDelivery(db, integration.id, `poll:${url}:${branch}:${sha}`, nowIso()))) continue;
              built += (
                await buildDeployments(
                  tracking(theirs, branch, () => true),
                  `new commit ${sha.slice(0, 12)} on ${branch}`,
                  sha,
                )
              ).length;
            }
          } catch (error) {
            if (signal.aborted) return built;
            logger.warn({ err: error, integrationId: integration.id }, 'could not poll a repository for build on push');
          }
        }
      }
      return built;
    },
  };
}

export type PushBuildService = ReturnType<typeof createPushBuildService>;

/**
 * What identifies one push, whatever delivery carries it: the repository, the ref, the
 * move (before → after) and, when GitHub sends it, the push time (so that the same move
 * made again later, after a force-push back, still counts as a new push).
 */
function pushKey(push: GitHubPush): string {
  return `github-push:${push.repository.id}:${push.ref}:${push.before}:${push.after}:${push.pushedAt ?? ''}`;
}
