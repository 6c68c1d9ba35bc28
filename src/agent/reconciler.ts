import type { DesiredDeploymentView, DesiredStateView } from '../contract/listener-protocol.js';

/** A container of this listener, as the runtime's labels and state describe it. */
export interface ObservedContainer {
  name: string;
  deploymentId: string;
  revisionId: string;
  running: boolean;
  /** Where it serves on this host; null when it publishes no port. */
  url: string | null;
}

/**
 * What to do, decided from the desired state and what runs; nothing else (no clock, no I/O).
 *
 * - `deploy`: start the revision's container; once healthy, remove `replaces` (the
 *   deployment's other containers). `rollout`: the revision waits for this (report DEPLOYING
 *   first, then DEPLOYED or DEPLOY_FAILED); otherwise it is DEPLOYED and its container is gone
 *   (report DEPLOYED with the new URL, never a failure).
 * - `adopt`: the revision's container already runs (an agent killed after starting it):
 *   check it answers, remove `replaces` and report DEPLOYED.
 * - `resume`: a DEPLOYED revision's container is stopped (host reboot): start it again.
 * - `retire`: containers of earlier revisions left beside a DEPLOYED one.
 * - `delete`: the deployment is being deleted: remove all of it, then report.
 * - `remove-orphans`: containers of deployments this listener no longer has (no report).
 */
export type Action =
  | { kind: 'deploy'; deployment: DesiredDeploymentView; rollout: boolean; replaces: string[] }
  | { kind: 'adopt'; deployment: DesiredDeploymentView; container: ObservedContainer; replaces: string[] }
  | { kind: 'resume'; deployment: DesiredDeploymentView; container: ObservedContainer; replaces: string[] }
  | { kind: 'retire'; deploymentId: string; names: string[] }
  | { kind: 'delete'; deploymentId: string; names: string[] }
  | { kind: 'remove-orphans'; deploymentId: string; names: string[] };

export interface ReconcileInput {
  desired: Pick<DesiredStateView, 'deployments' | 'deletions'>;
  running: ObservedContainer[];
  /** Revisions this agent already reported DEPLOY_FAILED: not tried again while Berth still lists them. */
  failedRevisions: ReadonlySet<string>;
}

/** Deletions first (they free resources), then each desired deployment, then orphans. */
export function reconcile({ desired, running, failedRevisions }: ReconcileInput): Action[] {
  const byDeployment = new Map<string, ObservedContainer[]>();
  for (const container of running) {
    const list = byDeployment.get(container.deploymentId) ?? [];
    list.push(container);
    byDeployment.set(container.deploymentId, list);
  }
  const names = (containers: ObservedContainer[]) => containers.map((container) => container.name).sort();
  const actions: Action[] = [];
  const known = new Set<string>();

  for (const deletion of desired.deletions) {
    known.add(deletion.deployment_id);
    actions.push({ kind: 'delete', deploymentId: deletion.deployment_id, names: names(byDeployment.get(deletion.deployment_id) ?? []) });
  }

  for (const deployment of desired.deployments) {
    // A deletion wins over a stale entry of the same deployment.
    if (known.has(deployment.deployment_id)) continue;
    known.add(deployment.deployment_id);
    const containers = byDeployment.get(deployment.deployment_id) ?? [];
    const target = containers.find((container) => container.revisionId === deployment.revision_id);
    const others = names(containers.filter((container) => container !== target));
    if (deployment.revision_status === 'DEPLOYED') {
      if (!target) actions.push({ kind: 'deploy', deployment, rollout: false, replaces: others });
      else if (!target.running) actions.push({ kind: 'resume', deployment, container: target, replaces: others });
      else if (others.length > 0) actions.push({ kind: 'retire', deploymentId: deployment.deployment_id, names: others });
      continue;
    }
    // AWAITING_DEPLOY or DEPLOYING: roll it out, unless this agent already saw it fail.
    if (failedRevisions.has(deployment.revision_id)) continue;
    if (target?.running && target.url) actions.push({ kind: 'adopt', deployment, container: target, replaces: others });
    // A stopped container of the revision is a start that never finished: `deploy` replaces it.
    else actions.push({ kind: 'deploy', deployment, rollout: true, replaces: others });
  }

  for (const [deploymentId, containers] of [...byDeployment].sort(([a], [b]) => a.localeCompare(b))) {
    if (!known.has(deploymentId)) actions.push({ kind: 'remove-orphans', deploymentId, names: names(containers) });
  }
  return actions;
}
