import type { RunnerLabelRequirementInput, RunnerLabelRequirementView } from '../contract/admin.js';
import { fail, listenerNotFound } from '../domain/errors.js';
import type { Principal, WorkspaceScope } from '../domain/tenancy.js';
import { nowIso } from '../store/database.js';
import { findListener } from '../store/repositories/listeners.js';
import { findRequiredLabels, type LabelScope, setRequiredLabels } from '../store/repositories/runner-labels.js';
import { findWorkspace } from '../store/repositories/tenancy.js';
import { allFieldsRead } from './all-fields-read.js';
import { recordChange } from './audit.js';
import type { ServiceDeps } from './index.js';

/**
 * Which runners may build for a workspace, or for the deployments on a listener
 * (docs/build-runners.md, placement): the labels they must advertise. A workspace's are an
 * administrator's to set (they bind every build of the workspace); a listener's, whoever
 * may change the listener. Jobs take them when they are queued.
 */
export function createRunnerLabelService({ db }: Pick<ServiceDeps, 'db'>) {
  async function workspaceTarget(principal: Principal, workspaceId: string) {
    const workspace = await findWorkspace(db, principal.organizationId, workspaceId.toLowerCase());
    if (!workspace) throw fail('workspace_not_found', `Workspace '${workspaceId}' not found.`);
    return { scope: 'workspace' as LabelScope, id: workspace.id, name: workspace.name, audit: { ...principal, workspaceId: workspace.id } };
  }

  async function listenerTarget(scope: WorkspaceScope, listenerId: string) {
    const id = listenerId.toLowerCase();
    const listener = await findListener(db, scope.workspaceId, id);
    if (!listener) throw listenerNotFound(id);
    return { scope: 'listener' as LabelScope, id, name: listener.compute_id, audit: scope };
  }

  async function set(
    target: Awaited<ReturnType<typeof workspaceTarget>>,
    organizationId: string,
    input: RunnerLabelRequirementInput,
  ): Promise<RunnerLabelRequirementView> {
    const { labels = [], ...unread } = input;
    allFieldsRead(unread);
    const sorted = [...new Set(labels)].sort();
    await db.transaction().execute(async (trx) => {
      await setRequiredLabels(trx, { scope: target.scope, scopeId: target.id, organizationId, labels: sorted }, nowIso());
      await recordChange(trx, target.audit, {
        action: `${target.scope}.runner_labels_set`,
        target: { type: target.scope, id: target.id, name: target.name },
        changedFields: ['labels'],
      });
    });
    return { labels: sorted };
  }

  return {
    async workspaceLabels(principal: Principal, workspaceId: string): Promise<RunnerLabelRequirementView> {
      const target = await workspaceTarget(principal, workspaceId);
      return { labels: await findRequiredLabels(db, target.scope, target.id) };
    },
    async setWorkspaceLabels(principal: Principal, workspaceId: string, input: RunnerLabelRequirementInput): Promise<RunnerLabelRequirementView> {
      return set(await workspaceTarget(principal, workspaceId), principal.organizationId, input);
    },
    async listenerLabels(scope: WorkspaceScope, listenerId: string): Promise<RunnerLabelRequirementView> {
      const target = await listenerTarget(scope, listenerId);
      return { labels: await findRequiredLabels(db, target.scope, target.id) };
    },
    async setListenerLabels(scope: WorkspaceScope, listenerId: string, input: RunnerLabelRequirementInput): Promise<RunnerLabelRequirementView> {
      return set(await listenerTarget(scope, listenerId), scope.organizationId, input);
    },
  };
}
