import { randomUUID } from 'node:crypto';
import {
  canonicalSource,
  completeResourceSpec,
  completeRevisionConfig,
  givenRevisionFields,
  newSourceConfig,
  type RevisionConfigInput,
  type SourceConfigInput,
  type SourceSpelling,
} from '../domain/deployment-config.js';
import { DEPLOYMENT_STATUSES } from '../domain/deployment-status.js';
import { conflict, deploymentNotFound } from '../domain/errors.js';
import { type PatchInput, planPatch } from '../domain/patch.js';
import { resolvePlacement } from '../domain/placement.js';
import { type Secret, validateSecrets } from '../domain/secrets.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { isUniqueViolation, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/deployments.js';
import { deploymentView, type DeploymentView } from './deployment-records.js';
import type { DeploymentServiceDeps } from './index.js';
import { findListenerForPlacement, listListenerIds } from './listeners.js';
import { appendRevision } from './revision-writer.js';

export interface CreateDeploymentInput {
  name: string;
  source: SourceSpelling;
  source_config?: SourceConfigInput | null;
  source_revision_config?: RevisionConfigInput | null;
  secrets: Secret[];
  image_version?: string | null;
}

export function createDeploymentService({ db, records, bus }: DeploymentServiceDeps) {
  const wakeEngine = (deploymentId: string) => bus.publish({ topic: 'work', deploymentId });

  return {
    /** The deployment, its first revision and its encrypted secrets, in one transaction. */
    async create(scope: WorkspaceScope, input: CreateDeploymentInput): Promise<DeploymentView> {
      const source = canonicalSource(input.source);
      const sourceConfig = newSourceConfig(source, input.source_config);
      const revisionConfig = completeRevisionConfig(source, givenRevisionFields(input.source_revision_config));
      const resourceSpec = completeResourceSpec(input.source_config?.resource_spec);
      validateSecrets(input.secrets);
      const now = nowIso();
      let created: DeploymentView;
      try {
        created = await db.transaction().execute(async (trx) => {
          const listener = sourceConfig.listener_id
            ? await findListenerForPlacement(trx, scope.workspaceId, sourceConfig.listener_id)
            : undefined;
          const placement = resolvePlacement({
            requiresListener: source === 'external_docker',
            listenerId: sourceConfig.listener_id,
            namespace: input.source_config?.listener_config?.k8s_namespace ?? null,
            listener: listener && { id: listener.id, namespaces: listener.compute_config.k8s_namespaces },
            availableListenerIds: sourceConfig.listener_id ? [] : await listListenerIds(trx, scope.workspaceId),
          });
          sourceConfig.listener_config = placement && { k8s_namespace: placement.namespace };
          const row: repo.DeploymentRow = {
            id: randomUUID(),
            workspace_id: scope.workspaceId,
            name: input.name,
            display_name: null,
            source: input.source,
            source_config: JSON.stringify(sourceConfig),
            deployment_type: sourceConfig.deployment_type,
            listener_id: placement?.listenerId ?? null,
            image_version: input.image_version ?? null,
            status: 'AWAITING_DATABASE',
            remote_reconciled: 0,
            latest_revision_id: null,
            active_revision_id: null,
            revision_count: 0,
            lease_owner: null,
            lease_expires_at: null,
            url: null,
            created_at: now,
            updated_at: now,
          };
          await repo.insertDeployment(trx, row);
          const revision = await appendRevision(trx, records, row, { config: revisionConfig, resourceSpec, secrets: input.secrets }, now);
          return deploymentView(row, revision, input.secrets);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`Deployment with name '${input.name}' already exists in this workspace.`);
        throw error;
      }
      wakeEngine(created.id);
      return created;
    },

    async get(scope: WorkspaceScope, id: string): Promise<DeploymentView> {
      const found = await repo.findDeploymentWithLatest(db, scope.workspaceId, id);
      if (!found) throw deploymentNotFound(id);
      return records.view(db, found);
    },

    async list(
      scope: WorkspaceScope,
      filters: repo.DeploymentFilters,
      page: { limit: number; offset: number },
    ): Promise<{ resources: DeploymentView[]; offset: number }> {
      const found = await repo.listDeployments(db, scope.workspaceId, filters, page);
      return { resources: await records.views(db, found), offset: page.offset + found.length };
    },

    /** In-place changes and, when the body calls for one, a new revision; one transaction. */
    async patch(scope: WorkspaceScope, id: string, input: PatchInput): Promise<DeploymentView> {
      const patched = await db.transaction().execute(async (trx) => {
        const now = nowIso();
        const row = await repo.lockDeployment(trx, scope.workspaceId, id, now);
        if (!row) throw deploymentNotFound(id);
        if (row.status === 'AWAITING_DELETE') throw conflict(`Deployment ID ${id} is being deleted and cannot be changed.`);
        const current = await records.withLatest(trx, row);
        const state = await records.state(trx, current);
        const plan = planPatch(state, input);
        row.source_config = JSON.stringify(plan.sourceConfig);
        if (plan.displayName !== undefined) row.display_name = plan.displayName;
        if (plan.imageVersion !== undefined) row.image_version = plan.imageVersion;
        await repo.updateDeployment(trx, id, {
          source_config: row.source_config,
          display_name: row.display_name,
          image_version: row.image_version,
        });
        if (!plan.revision) return deploymentView(row, current.latest, state.secrets);
        const revision = await appendRevision(trx, records, row, plan.revision, now);
        return deploymentView(row, revision, plan.revision.secrets);
      });
      wakeEngine(id);
      return patched;
    },

    /**
     * Marks the deployment AWAITING_DELETE; the engine stops what runs for it, removes it
     * from the runtime and then deletes it, after which it answers 404.
     */
    async delete(scope: WorkspaceScope, id: string): Promise<void> {
      const row = await repo.findDeployment(db, scope.workspaceId, id);
      if (!row) throw deploymentNotFound(id);
      const others = DEPLOYMENT_STATUSES.filter((status) => status !== 'AWAITING_DELETE');
      await repo.moveDeploymentStatus(db, id, others, 'AWAITING_DELETE', nowIso());
      wakeEngine(id);
      bus.publish({ topic: 'deployment', deploymentId: id });
    },
  };
}

export type DeploymentService = ReturnType<typeof createDeploymentService>;
