import { badRequest, deploymentNotFound, revisionNotFound } from '../domain/errors.js';
import { planExplicitRevision } from '../domain/patch.js';
import type { ResourceSpec, RevisionConfig, RevisionConfigInput } from '../domain/deployment-config.js';
import { canTransition, isInProgress } from '../domain/revision-status.js';
import type { Secret } from '../domain/secrets.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { announce, recordStatus } from '../events/recorder.js';
import { type Executor, nowIso } from '../store/database.js';
import * as deployments from '../store/repositories/deployments.js';
import * as revisions from '../store/repositories/revisions.js';
import { deploymentView, type DeploymentView, revisionView, type RevisionView } from './deployment-records.js';
import type { DeploymentServiceDeps } from './index.js';
import { appendRevision } from './revision-writer.js';

export interface CreateRevisionInput {
  source_revision_config?: RevisionConfigInput | null;
  source_config?: { resource_spec?: ResourceSpec | null; install_command?: string | null; build_command?: string | null } | null;
  secrets?: Secret[] | null;
  tracked_packages?: string[] | null;
}

export function createRevisionService({ db, records, bus }: DeploymentServiceDeps) {
  const wakeEngine = (deploymentId: string) => bus.publish({ topic: 'work', deploymentId });

  async function deploymentOrFail(executor: Executor, scope: WorkspaceScope, deploymentId: string) {
    const row = await deployments.findDeployment(executor, scope.workspaceId, deploymentId);
    if (!row) throw deploymentNotFound(deploymentId);
    return row;
  }

  async function lockedDeploymentOrFail(executor: Executor, scope: WorkspaceScope, deploymentId: string, now: string) {
    const row = await deployments.lockDeployment(executor, scope.workspaceId, deploymentId, now);
    if (!row) throw deploymentNotFound(deploymentId);
    if (row.status === 'AWAITING_DELETE') throw badRequest(`Deployment ID ${deploymentId} is being deleted.`);
    return row;
  }

  return {
    async list(
      scope: WorkspaceScope,
      deploymentId: string,
      filters: { statuses?: string[]; remoteReconciled?: boolean },
      page: { limit: number; offset: number },
    ): Promise<{ resources: RevisionView[]; offset: number }> {
      await deploymentOrFail(db, scope, deploymentId);
      const rows = await revisions.listRevisions(db, deploymentId, filters, page);
      return { resources: rows.map(revisionView), offset: page.offset + rows.length };
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
        const plan = planExplicitRevision(state, {
          source_revision_config: input.source_revision_config,
          resource_spec: input.source_config?.resource_spec,
          secrets: input.secrets,
          tracked_packages: input.tracked_packages,
        });
        const { install_command, build_command } = input.source_config ?? {};
        if (install_command != null || build_command != null) {
          const sourceConfig = {
            ...state.sourceConfig,
            ...(install_command != null ? { install_command } : {}),
            ...(build_command != null ? { build_command } : {}),
          };
          await deployments.updateDeployment(trx, deploymentId, { source_config: JSON.stringify(sourceConfig) });
        }
        return revisionView(await appendRevision(trx, records, row, plan, now));
      });
      wakeEngine(deploymentId);
      return created;
    },

    /**
     * A new revision with an earlier revision's configuration, secrets and resources
     * (rollback). The commit is kept, so the same code is deployed again.
     */
    async redeploy(scope: WorkspaceScope, deploymentId: string, revisionId: string): Promise<DeploymentView> {
      const redeployed = await db.transaction().execute(async (trx) => {
        const now = nowIso();
        const row = await lockedDeploymentOrFail(trx, scope, deploymentId, now);
        const source = await revisions.findRevision(trx, deploymentId, revisionId);
        if (!source) throw revisionNotFound(revisionId);
        if (isInProgress(source.status)) {
          throw badRequest(
            `Revision ID ${revisionId} is still in progress (${source.status}); wait for it to finish or interrupt it before redeploying it.`,
          );
        }
        const secrets = (await records.secretsOf(trx, [source.id])).get(source.id) ?? [];
        const plan = {
          config: JSON.parse(source.source_revision_config) as RevisionConfig,
          resourceSpec: source.resource_spec ? (JSON.parse(source.resource_spec) as ResourceSpec) : {},
          secrets,
          imageRef: source.image_ref,
        };
        return deploymentView(row, await appendRevision(trx, records, row, plan, now), secrets);
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
          throw badRequest(`Revision ID ${revisionId} is not in progress (${row.status}); only in-progress revisions can be interrupted.`);
        }
        const message = 'Interrupted by request.';
        const now = nowIso();
        // Compare-and-set: if the engine moved the revision meanwhile, look again.
        const moved = await db.transaction().execute(async (trx) => {
          const ok = await revisions.transitionRevision(trx, { revisionId, deploymentId, from: row.status, to: 'INTERRUPTED', message, now });
          if (ok) await recordStatus(trx, { deploymentId, revisionId, status: 'INTERRUPTED', message, at: now });
          return ok;
        });
        if (moved) {
          // The engine hears this and stops the running step; the next revision may start.
          announce(bus, deploymentId);
          wakeEngine(deploymentId);
          return revisionView({ ...row, status: 'INTERRUPTED', status_message: message, updated_at: now });
        }
      }
    },
  };
}

export type RevisionService = ReturnType<typeof createRevisionService>;
