import { randomUUID } from 'node:crypto';
import { canonicalSource, completeResourceSpec, completeRevisionConfig, givenRevisionFields, newSourceConfig } from '../domain/deployment-config.js';
import { beingDeleted, deploymentNotFound, fail } from '../domain/errors.js';
import { planPatch, planSecretsChange } from '../domain/patch.js';
import { mergePreviewSettings, refuseUnpreviewable } from '../domain/previews.js';
import { resolvePlacement } from '../domain/placement.js';
import { mergeSecrets, type SecretChange, validateSecrets } from '../domain/secrets.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { moveDeployment } from '../lifecycle/deployments.js';
import { entityTag, requireIfMatch } from '../domain/entity-tags.js';
import { announce, announceListener, announceWebhooks } from '../events/recorder.js';
import { isUniqueViolation, nowIso } from '../store/database.js';
import * as repo from '../store/repositories/deployments.js';
import type { CreateDeploymentInput, DeploymentView, PatchDeploymentInput } from '../contract/deployments.js';
import { allFieldsRead } from './all-fields-read.js';
import { recordChange } from './audit.js';
import { outboxEvent } from './webhooks.js';
import { fieldsSet, secretNamesOf } from '../domain/audit.js';
import { refuseOverDatabaseLimit } from './database-limit.js';
import { deploymentView } from './deployment-records.js';
import { assertImageInWorkspace } from './image-ownership.js';
import type { DeploymentServiceDeps } from './index.js';
import { findListenerForPlacement, listListenerIds } from './listeners.js';
import { PageBudget } from './page-size.js';
import { appendRevision, insertWithFirstRevision } from './revision-writer.js';
import { PIN_FIELDS, unpinDeployment, unpinForExplicitRevision } from './pins.js';

export function createDeploymentService({ db, records, bus, revisionsKept, integrations, uploads, registry, provisioning }: DeploymentServiceDeps) {
  const wakeEngine = (deploymentId: string) => bus.publish({ topic: 'work', deploymentId });
  const checkRepoUrl = (url: string | null | undefined) => {
    if (url != null) integrations.checkRepositoryUrl(url, ['body', 'source_config', 'repo_url']);
  };
  const registryLocation = registry?.settings.location;

  /** A delete with If-Match: compared and marked under the deployment's row lock, so no write slips in between. */
  const deleteIfUnchanged = async (scope: WorkspaceScope, id: string, ifMatch: string) => {
    const { moved, listenerId, outboxed } = await db.transaction().execute(async (trx) => {
      const row = await repo.lockDeploymentAsIs(trx, scope.workspaceId, id);
      if (!row) throw deploymentNotFound(id);
      const current = await records.withLatest(trx, row);
      requireUnchanged(ifMatch, deploymentView(row, current.latest, (await records.state(trx, current)).secrets), id);
      const moved = await moveDeployment({ db, bus }, id, 'AWAITING_DELETE', { fence: { kind: 'api' } }, trx);
      const outboxed = moved && (await outboxEvent(trx, scope.workspaceId, 'deployment.deleted', { deployment: { id, name: row.name } }));
      return { moved, listenerId: row.listener_id, outboxed };
    });
    // Inside a transaction the lifecycle leaves the announcements to its caller, after commit.
    if (moved) {
      announce(bus, id);
      if (listenerId) announceListener(bus, listenerId);
    }
    if (outboxed) announceWebhooks(bus);
    wakeEngine(id);
  };

  return {
    /** The deployment, its first revision and its encrypted secrets, in one transaction. */
    async create(scope: WorkspaceScope, input: CreateDeploymentInput): Promise<DeploymentView> {
      const { name, source: spelling, source_config, source_revision_config, secrets, image_version, ...unread } = input;
      allFieldsRead(unread);
      const source = canonicalSource(spelling);
      // Field checks (422) before the source's rules (400), as pydantic validates before the handler.
      checkRepoUrl(source_config?.repo_url);
      const givenRevision = givenRevisionFields(source_revision_config);
      const sourceConfig = newSourceConfig(source, source_config);
      let repoDefaultBranch: string | undefined;
      if (source === 'codehost' && sourceConfig.integration_id && sourceConfig.repo_url) {
        // Asks the code host (cached briefly), so it runs before the transaction.
        const repository = await integrations.repositoryFor(scope, sourceConfig.integration_id, sourceConfig.repo_url);
        // Stored as the integration lists it: the same spelling everywhere, and never credentials.
        sourceConfig.repo_url = repository.url;
        repoDefaultBranch = repository.defaultBranch;
      }
      const revisionConfig = completeRevisionConfig(source, givenRevision, { repoDefaultBranch });
      if (revisionConfig.image_uri) await assertImageInWorkspace(db, registryLocation, scope.workspaceId, revisionConfig.image_uri);
      const resourceSpec = completeResourceSpec(source_config?.resource_spec);
      validateSecrets(secrets);
      await refuseOverDatabaseLimit(db, provisioning, scope.workspaceId, secrets);
      const now = nowIso();
      let created: DeploymentView;
      let outboxed = false;
      try {
        created = await db.transaction().execute(async (trx) => {
          const listener = sourceConfig.listener_id ? await findListenerForPlacement(trx, scope.workspaceId, sourceConfig.listener_id) : undefined;
          const requiresListener = source === 'external_docker';
          const placement = resolvePlacement({
            requiresListener,
            listenerId: sourceConfig.listener_id,
            namespace: source_config?.listener_config?.k8s_namespace ?? null,
            listener: listener && { id: listener.id, namespaces: listener.compute_config.k8s_namespaces, computeType: listener.compute_type },
            // Named only in the error for a deployment that needs a listener and names none.
            availableListenerIds: requiresListener && !sourceConfig.listener_id ? await listListenerIds(trx, scope.workspaceId) : [],
          });
          sourceConfig.listener_config = placement?.namespace ? { k8s_namespace: placement.namespace } : null;
          const plan = { config: revisionConfig, resourceSpec, secrets };
          const { deployment, revision } = await insertWithFirstRevision(
            trx,
            records,
            {
              id: randomUUID(),
              workspace_id: scope.workspaceId,
              name,
              display_name: null,
              source: spelling,
              source_config: sourceConfig,
              deployment_type: sourceConfig.deployment_type,
              listener_id: placement?.listenerId ?? null,
              image_version: image_version ?? null,
              created_at: now,
            },
            plan,
          );
          await recordChange(trx, scope, {
            action: 'deployment.create',
            target: { type: 'deployment', id: deployment.id, name },
            changedFields: fieldsSet(input),
            secretNames: secretNamesOf(secrets),
          });
          const view = deploymentView(deployment, revision, secrets);
          const { secrets: _values, ...shown } = view;
          outboxed = await outboxEvent(trx, scope.workspaceId, 'deployment.created', { deployment: shown });
          return view;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw fail('deployment_name_taken', `Deployment with name '${name}' already exists in this workspace.`);
        throw error;
      }
      wakeEngine(created.id);
      if (outboxed) announceWebhooks(bus);
      return created;
    },

    async get(scope: WorkspaceScope, id: string): Promise<DeploymentView> {
      const found = await repo.findDeploymentForView(db, scope.workspaceId, id);
      if (!found) throw deploymentNotFound(id);
      return records.view(db, found);
    },

    async list(
      scope: WorkspaceScope,
      filters: repo.DeploymentFilters,
      page: { limit: number; offset: number },
    ): Promise<{ resources: DeploymentView[]; offset: number }> {
      const found = await repo.listDeployments(db, scope.workspaceId, filters, page);
      const budget = new PageBudget<DeploymentView>();
      // A batch at a time, so a page cut short does not decrypt the secrets of what it leaves out.
      for (let start = 0; start < found.length; start += VIEW_BATCH) {
        const batch = found.slice(start, start + VIEW_BATCH);
        const views = await records.views(db, batch);
        for (const view of views) {
          if (!budget.add(view)) {
            return { resources: budget.items, offset: page.offset + budget.items.length };
          }
        }
      }
      return { resources: budget.items, offset: page.offset + budget.items.length };
    },

    /** In-place changes and, when the body calls for one, a new revision; one transaction. */
    async patch(scope: WorkspaceScope, id: string, input: PatchDeploymentInput, ifMatch?: string): Promise<DeploymentView> {
      // repo_url cannot change, but a value git must not see is a 422 whatever is stored.
      checkRepoUrl(input.source_config?.repo_url);
      const patched = await db.transaction().execute(async (trx) => {
        const now = nowIso();
        // Locked as it is, so that If-Match compares with what a GET answered.
        const row = await repo.lockDeploymentAsIs(trx, scope.workspaceId, id);
        if (!row) throw deploymentNotFound(id);
        const current = await records.withLatest(trx, row);
        const state = await records.state(trx, current);
        if (ifMatch !== undefined) requireUnchanged(ifMatch, deploymentView(row, current.latest, state.secrets), id);
        if (row.status === 'AWAITING_DELETE') throw beingDeleted(id);
        row.updated_at = now;
        const plan = planPatch(state, input);
        const tarball = input.source_revision_config?.source_tarball_path;
        if (tarball != null) await uploads.checkTarball(id, tarball);
        const image = input.source_revision_config?.image_uri;
        if (image) await assertImageInWorkspace(trx, registryLocation, scope.workspaceId, image);
        row.source_config = plan.sourceConfig;
        if (plan.displayName !== undefined) row.display_name = plan.displayName;
        if (plan.imageVersion !== undefined) row.image_version = plan.imageVersion;
        if (input.previews != null) {
          row.preview_settings = mergePreviewSettings(row.preview_settings, input.previews);
          refuseUnpreviewable(
            { isPreview: row.parent_deployment_id !== null, fromRepository: canonicalSource(row.source) === 'codehost' },
            row.preview_settings,
          );
        }
        await repo.updateDeployment(trx, id, {
          source_config: row.source_config,
          display_name: row.display_name,
          image_version: row.image_version,
          ...(input.previews != null && row.preview_settings ? { preview_settings: row.preview_settings } : {}),
          updated_at: now,
        });
        // A change that makes a revision is explicit: the deployment follows it, pinned or not.
        const unpinned = plan.revision ? await unpinForExplicitRevision(trx, row) : false;
        await recordChange(trx, scope, {
          action: 'deployment.update',
          target: { type: 'deployment', id, name: row.name },
          changedFields: unpinned ? [...fieldsSet(input), ...PIN_FIELDS].sort() : fieldsSet(input),
          secretNames: secretNamesOf(input.secrets),
        });
        if (!plan.revision) return deploymentView(row, current.latest, state.secrets);
        const revision = await appendRevision(trx, records, row, plan.revision, { now, keep: revisionsKept });
        return deploymentView(row, revision, plan.revision.secrets);
      });
      wakeEngine(id);
      return patched;
    },

    /**
     * Sets and removes secrets by name, merged with the current set under the deployment's lock:
     * a new revision exactly as a PATCH with the merged full set, so a client never needs the
     * other values (the dashboard is never given them).
     */
    async mergeSecrets(scope: WorkspaceScope, id: string, change: SecretChange, ifMatch?: string): Promise<DeploymentView> {
      const merged = await db.transaction().execute(async (trx) => {
        const row = await repo.lockDeploymentAsIs(trx, scope.workspaceId, id);
        if (!row) throw deploymentNotFound(id);
        const current = await records.withLatest(trx, row);
        const state = await records.state(trx, current);
        if (ifMatch !== undefined) requireUnchanged(ifMatch, deploymentView(row, current.latest, state.secrets), id);
        if (row.status === 'AWAITING_DELETE') throw beingDeleted(id);
        const plan = planSecretsChange(state, mergeSecrets(state.secrets, change));
        if (plan) {
          row.updated_at = nowIso();
          await repo.updateDeployment(trx, id, { updated_at: row.updated_at });
        }
        const unpinned = plan ? await unpinForExplicitRevision(trx, row) : false;
        await recordChange(trx, scope, {
          action: 'deployment.update',
          target: { type: 'deployment', id, name: row.name },
          changedFields: unpinned ? ['secrets', ...PIN_FIELDS].sort() : ['secrets'],
          secretNames: secretNamesOf([...change.set, ...change.remove.map((name) => ({ name }))]),
        });
        if (!plan) return deploymentView(row, current.latest, state.secrets);
        const revision = await appendRevision(trx, records, row, plan, { now: row.updated_at, keep: revisionsKept });
        return deploymentView(row, revision, plan.secrets);
      });
      wakeEngine(id);
      return merged;
    },

    /** POST …/unpin (services/pins.ts). */
    unpin: (scope: WorkspaceScope, id: string): Promise<DeploymentView> => unpinDeployment({ db, records, bus }, scope, id),

    /**
     * Marks the deployment AWAITING_DELETE; the engine stops what runs for it, removes it
     * from the runtime and then deletes it, after which it answers 404.
     */
    async delete(scope: WorkspaceScope, id: string, ifMatch?: string): Promise<void> {
      if (ifMatch !== undefined) return deleteIfUnchanged(scope, id, ifMatch);
      const row = await repo.findDeployment(db, scope.workspaceId, id);
      if (!row) throw deploymentNotFound(id);
      // Already AWAITING_DELETE: nothing moves, and the answer is the same.
      let outboxed = false;
      await moveDeployment({ db, bus }, id, 'AWAITING_DELETE', {
        fence: { kind: 'api' },
        alongside: async (trx) => {
          await recordChange(trx, scope, { action: 'deployment.delete', target: { type: 'deployment', id, name: row.name } });
          outboxed = await outboxEvent(trx, scope.workspaceId, 'deployment.deleted', { deployment: { id, name: row.name } });
        },
      });
      if (outboxed) announceWebhooks(bus);
      wakeEngine(id);
    },
  };
}

/**
 * 412 unless `If-Match` names the deployment as it is. The tag leaves secret values out
 * (they would be a digest of secrets in every proxy's log); a change of secrets makes a
 * new revision, which changes `latest_revision_id`, so the tag changes all the same.
 */
function requireUnchanged(ifMatch: string, view: DeploymentView, id: string): void {
  requireIfMatch(ifMatch, deploymentTag(view), `Deployment ID ${id}`);
}

export function deploymentTag(view: DeploymentView): string {
  return entityTag({ ...view, secrets: view.secrets.map((secret) => secret.name) });
}

/** Deployments viewed at once when listing: a default page (20) in one go. */
const VIEW_BATCH = 25;
