import { alreadyHeadingTo, LIVE_REVISION_STATUSES } from '../domain/build-on-push.js';
import { beingDeleted, deploymentNotFound, fail, revisionNotFound } from '../domain/errors.js';
import { planExplicitRevision } from '../domain/patch.js';
import { canTransition, isInProgress } from '../domain/revision-status.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { announce, recordLog, recordPushIgnored } from '../events/recorder.js';
import { pushIgnoredMessage } from '../domain/pins.js';
import { moveRevision } from '../lifecycle/revisions.js';
import { type Executor, nowIso } from '../store/database.js';
import { insertBerthAuditRow } from '../store/repositories/audit.js';
import * as deployments from '../store/repositories/deployments.js';
import * as revisions from '../store/repositories/revisions.js';
import type { CreateRevisionInput, DeploymentView, RevisionView } from '../contract/deployments.js';
import { allFieldsRead } from './all-fields-read.js';
import { recordChange } from './audit.js';
import { fieldsSet, secretNamesOf } from '../domain/audit.js';
import { deploymentView, revisionView } from './deployment-records.js';
import type { DeploymentServiceDeps } from './index.js';
import { PageBudget } from './page-size.js';
import { appendRevision } from './revision-writer.js';
import { PIN_FIELDS, pinForRedeploy, unpinForExplicitRevision } from './pins.js';

export function createRevisionService({ db, records, bus, revisionsKept, uploads }: DeploymentServiceDeps) {
  const wakeEngine = (deploymentId: string) => bus.publish({ topic: 'work', deploymentId });

  async function deploymentOrFail(executor: Executor, scope: WorkspaceScope, deploymentId: string) {
    const row = await deployments.findDeployment(executor, scope.workspaceId, deploymentId);
    if (!row) throw deploymentNotFound(deploymentId);
    return row;
  }

  async function lockedDeploymentOrFail(executor: Executor, scope: WorkspaceScope, deploymentId: string, now: string) {
    const row = await deployments.lockDeployment(executor, scope.workspaceId, deploymentId, now);
    if (!row) throw deploymentNotFound(deploymentId);
    // The same answer as a PATCH of a deployment being deleted: one status for one condition.
    if (row.status === 'AWAITING_DELETE') throw beingDeleted(deploymentId);
    return row;
  }

  return {
    async list(
      scope: WorkspaceScope,
      deploymentId: string,
      filters: revisions.RevisionFilters,
      page: { limit: number; offset: number },
    ): Promise<{ resources: RevisionView[]; offset: number }> {
      await deploymentOrFail(db, scope, deploymentId);
      const rows = await revisions.listRevisions(db, deploymentId, filters, page);
      const budget = new PageBudget<RevisionView>();
      for (const row of rows) if (!budget.add(revisionView(row))) break;
      return { resources: budget.items, offset: page.offset + budget.items.length };
    },

    async get(scope: WorkspaceScope, deploymentId: string, revisionId: string): Promise<RevisionView> {
      await deploymentOrFail(db, scope, deploymentId);
      const row = await revisions.findRevision(db, deploymentId, revisionId);
      if (!row) throw revisionNotFound(revisionId);
      return revisionView(row);
    },

    /** Always a new revision, built from the latest one with the given changes. */
    async create(scope: WorkspaceScope, deploymentId: string, input: CreateRevisionInput): Promise<RevisionView> {
      const created = await db.transaction().execute(async (trx) => {
        const now = nowIso();
        const row = await lockedDeploymentOrFail(trx, scope, deploymentId, now);
        const state = await records.state(trx, await records.withLatest(trx, row));
        const { source_revision_config, source_config, secrets, tracked_packages, ...unread } = input;
        allFieldsRead(unread);
        const tarball = source_revision_config?.source_tarball_path;
        if (tarball != null) await uploads.checkTarball(deploymentId, tarball);
        const { resource_spec, install_command, build_command, ...unreadConfig } = source_config ?? {};
        allFieldsRead(unreadConfig);
        const plan = planExplicitRevision(state, { source_revision_config, resource_spec, secrets, tracked_packages });
        if (install_command != null || build_command != null) {
          const sourceConfig = {
            ...state.sourceConfig,
            ...(install_command != null ? { install_command } : {}),
            ...(build_command != null ? { build_command } : {}),
          };
          await deployments.updateDeployment(trx, deploymentId, { source_config: sourceConfig, updated_at: now });
        }
        const revision = await appendRevision(trx, records, row, plan, { now, keep: revisionsKept });
        const unpinned = await unpinForExplicitRevision(trx, row);
        await recordChange(trx, scope, {
          action: 'revision.create',
          target: { type: 'revision', id: revision.id, name: row.name },
          changedFields: unpinned ? [...fieldsSet(input), ...PIN_FIELDS].sort() : fieldsSet(input),
          secretNames: secretNamesOf(secrets),
        });
        return revisionView(revision);
      });
      wakeEngine(deploymentId);
      return created;
    },

    /**
     * A new revision of the latest one as it is, for build on push: its branch is fetched
     * again, so it builds the branch's newest commit (never an older one a replayed push
     * names). Until it is built, its `repo_commit_sha` is the pushed commit. Null for a
     * deployment being deleted, and for one already heading to that commit (see
     * alreadyHeadingTo): decided under the deployment's row lock, so two deliveries of one
     * push, on any replica, make one revision. Null too for a pinned deployment, which
     * records the push as a `push_ignored_pinned` event instead (under the same lock, so
     * a rollback and a push never both win).
     */
    async rebuild(deployment: deployments.DeploymentRecord, reason: string, commit: string | null, pushed: string): Promise<string | null> {
      let ignored = false;
      const created = await db.transaction().execute(async (trx) => {
        const now = nowIso();
        const row = await deployments.lockDeploymentAsIs(trx, deployment.workspace_id, deployment.id);
        if (!row || row.status === 'AWAITING_DELETE') return null;
        if (row.pinned_revision_id !== null) {
          // A delivery's `after` is whatever its sender wrote: only a full sha is named as sent.
          const named = commit ?? (pushed.replace(/[^0-9a-z]/gi, '').slice(0, 64) || 'unknown');
          const message = pushIgnoredMessage(named, reason, row.pinned_revision_id);
          await recordPushIgnored(trx, { deploymentId: row.id, pinnedRevisionId: row.pinned_revision_id, commit: named, message });
          ignored = true;
          return null;
        }
        if (commit) {
          const [newestLive] = await revisions.listRevisions(trx, row.id, { statuses: [...LIVE_REVISION_STATUSES] }, { limit: 1, offset: 0 });
          if (alreadyHeadingTo(newestLive, commit)) return null;
        }
        const planned = planExplicitRevision(await records.state(trx, await records.withLatest(trx, row)), {});
        const plan = { ...planned, config: { ...planned.config, repo_commit_sha: commit } };
        const revision = await appendRevision(trx, records, row, plan, { now, keep: revisionsKept });
        await recordLog(trx, { deploymentId: row.id, revisionId: revision.id, logType: 'build', level: 'INFO', message: `Build on push: ${reason}.` });
        // No key asked for it: Berth made it, for the push.
        const target = { type: 'revision', id: revision.id, name: row.name };
        await insertBerthAuditRow(trx, { workspaceId: row.workspace_id }, { action: 'revision.create', target, reason: `build on push: ${reason}` });
        return revision.id;
      });
      if (created) wakeEngine(deployment.id);
      if (ignored) announce(bus, deployment.id);
      return created;
    },

    /**
     * A new revision with an earlier revision's configuration, secrets and resources
     * (rollback). The commit is kept, so the same code is deployed again, from its image
     * when that still exists (the engine builds the commit again when it is gone). A
     * redeploy of a revision that is not the latest pins the deployment (domain/pins.ts).
     */
    async redeploy(scope: WorkspaceScope, deploymentId: string, revisionId: string): Promise<DeploymentView> {
      const redeployed = await db.transaction().execute(async (trx) => {
        const now = nowIso();
        const row = await lockedDeploymentOrFail(trx, scope, deploymentId, now);
        const source = await revisions.findRevision(trx, deploymentId, revisionId);
        if (!source) throw revisionNotFound(revisionId);
        if (isInProgress(source.status)) {
          throw fail(
            'revision_in_progress',
            `Revision ID ${revisionId} is still in progress (${source.status}); wait for it to finish or interrupt it before redeploying it.`,
          );
        }
        const secrets = await records.secretsOfRevision(trx, source);
        const plan = { config: source.source_revision_config, resourceSpec: source.resource_spec ?? {}, secrets, imageRef: source.image_ref };
        // The pin is decided on the row as it was: appendRevision makes the new revision the latest.
        const before = { ...row };
        const revision = await appendRevision(trx, records, row, plan, { now, keep: revisionsKept });
        await recordChange(trx, scope, { action: 'revision.redeploy', target: { type: 'revision', id: revision.id, name: row.name }, changedFields: [] });
        await pinForRedeploy(trx, scope, before, source.id, revision.id, now);
        row.pinned_revision_id = before.pinned_revision_id;
        row.pinned_at = before.pinned_at;
        return deploymentView(row, revision, secrets);
      });
      wakeEngine(deploymentId);
      return redeployed;
    },

    /** Stops an in-progress revision: it ends INTERRUPTED and the next one may run. */
    async interrupt(scope: WorkspaceScope, deploymentId: string, revisionId: string): Promise<RevisionView> {
      await deploymentOrFail(db, scope, deploymentId);
      for (;;) {
        const row = await revisions.findRevision(db, deploymentId, revisionId);
        if (!row) throw revisionNotFound(revisionId);
        if (row.status === 'INTERRUPTED') return revisionView(row);
        if (!canTransition(row.status, 'INTERRUPTED')) {
          throw fail(
            'revision_not_in_progress',
            `Revision ID ${revisionId} is not in progress (${row.status}); only in-progress revisions can be interrupted.`,
          );
        }
        const message = 'Interrupted by request.';
        const result = await moveRevision({ db, bus }, row, 'INTERRUPTED', {
          message,
          fence: { kind: 'api' },
          alongside: (trx) => recordChange(trx, scope, { action: 'revision.interrupt', target: { type: 'revision', id: row.id, name: null } }),
        });
        // Another writer (the engine) moved the revision meanwhile: look again.
        if (result.outcome !== 'ok') continue;
        // The engine hears this and stops the running step; the next revision may start.
        wakeEngine(deploymentId);
        return revisionView({ ...row, status: 'INTERRUPTED', status_message: message, updated_at: result.at });
      }
    },
  };
}

export type RevisionService = ReturnType<typeof createRevisionService>;
