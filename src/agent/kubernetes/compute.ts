import type { KubeConfig } from '@kubernetes/client-node';
import type { DesiredDeploymentView, DesiredStateView } from '../../contract/listener-protocol.js';
import { errorMessage } from '../../domain/error-message.js';
import type { AgentLink, ListenerCompute, LogLine } from '../compute.js';
import type { KubernetesSettings } from '../config.js';
import { KubernetesApplier } from './applier.js';
import { KubernetesRequestError } from './kube-errors.js';
import type { DesiredDeployment } from './manifests.js';
import { kubernetesNames } from './names.js';
import { API_PORT } from './server-workloads.js';
import { ManifestError } from './syntax.js';

/** While a rollout is in progress, readiness is read this often. */
export const ROLLOUT_CHECK_SECONDS = 2;
/** Failures that waiting cannot mend: reported at once, not at the deploy deadline. */
const FAIL_AT_ONCE = new Set(['InvalidImageName', 'ProgressDeadlineExceeded', 'NotFound']);
/** The cluster refused the request itself (no such namespace, not allowed, invalid): retrying the same apply cannot help. */
const REFUSED = new Set([400, 403, 404, 422]);

interface Rollout {
  /** Epoch ms after which the revision is failed (its deploy timeout). */
  deadline: number;
  applied: boolean;
  lines: LogLine[];
  lastWaiting?: string;
}

interface Applied {
  revisionId: string;
  namespace: string;
  at: number;
}

/**
 * A Kubernetes cluster (compute type k8s): each deployment becomes the objects
 * `renderDeployment` describes, applied with server-side apply into its namespace. A new
 * revision is applied, then its readiness read on every pass until it is ready (DEPLOYED,
 * with its Service's cluster address), cannot become ready (DEPLOY_FAILED at once), or its
 * deploy timeout passes (DEPLOY_FAILED with what it still waited for). Running deployments
 * are applied again every resync period to undo drift; objects this listener applied for
 * deployments it no longer has are deleted.
 *
 * Only what Kubernetes keeps is trusted across restarts: a restarted agent applies the same
 * objects again (server-side apply makes that a no-op) and reads readiness afresh.
 */
export class KubernetesCompute implements ListenerCompute {
  private readonly applier: KubernetesApplier;
  private readonly rollouts = new Map<string, Rollout>();
  private readonly applied = new Map<string, Applied>();
  private lastOrphanScan = { generation: -1, at: 0 };

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly settings: Pick<KubernetesSettings, 'namespace' | 'resyncSeconds'>,
    private readonly clock: () => number = Date.now,
  ) {
    this.applier = new KubernetesApplier(kubeConfig);
  }

  async unavailableReason(): Promise<string | null> {
    if (this.kubeConfig.getCurrentCluster()) return null;
    return 'No Kubernetes cluster is configured: run the listener in a pod with its service account, or point KUBECONFIG at a kubeconfig with a current context.';
  }

  /** Where deployments go that Berth names no namespace for. */
  get defaultNamespace(): string {
    const context = this.kubeConfig.getContextObject(this.kubeConfig.getCurrentContext());
    return this.settings.namespace || context?.namespace || 'default';
  }

  async apply(desired: DesiredStateView, link: AgentLink, failed: ReadonlySet<string>): Promise<number | undefined> {
    const deleting = new Set(desired.deletions.map((deletion) => deletion.deployment_id));
    for (const deletion of desired.deletions) {
      if (link.signal.aborted) return undefined;
      await this.delete(deletion.deployment_id, deletion.namespace ?? this.defaultNamespace, link);
    }

    const wanted = new Map<string, string>();
    let rollingOut = false;
    for (const deployment of desired.deployments) {
      if (link.signal.aborted) return undefined;
      if (deleting.has(deployment.deployment_id)) continue;
      const namespace = deployment.namespace ?? this.defaultNamespace;
      wanted.set(deployment.deployment_id, namespace);
      if (deployment.revision_status === 'DEPLOYED') await this.keep(deployment, namespace, link);
      else if (!failed.has(deployment.revision_id) && (await this.rollOut(deployment, namespace, link))) rollingOut = true;
    }
    for (const revisionId of this.rollouts.keys()) {
      if (!desired.deployments.some((deployment) => deployment.revision_id === revisionId)) this.rollouts.delete(revisionId);
    }
    await this.removeOrphans(desired.generation, wanted, deleting, link);
    return rollingOut ? ROLLOUT_CHECK_SECONDS : undefined;
  }

  private async delete(deploymentId: string, namespace: string, link: AgentLink): Promise<void> {
    try {
      const deleted = await this.applier.delete({ namespace, deploymentId }, link.signal);
      link.logger.info({ deployment: deploymentId, namespace, objects: deleted.length }, 'deleted the deployment from the cluster');
    } catch (error) {
      link.logger.warn({ deployment: deploymentId, namespace, error: errorMessage(error) }, 'could not delete the deployment; will retry');
      return;
    }
    this.applied.delete(deploymentId);
    await link.reportDeletion(deploymentId);
  }

  /** A DEPLOYED revision: applied again when this agent has not applied it here lately (restart, rollback, drift). */
  private async keep(deployment: DesiredDeploymentView, namespace: string, link: AgentLink): Promise<void> {
    const last = this.applied.get(deployment.deployment_id);
    const fresh = this.clock() - (last?.at ?? -Infinity) < this.settings.resyncSeconds * 1000;
    if (last && last.revisionId === deployment.revision_id && last.namespace === namespace && fresh) return;
    try {
      await this.applier.apply(this.manifestOf(deployment, namespace, link), link.signal);
      this.applied.set(deployment.deployment_id, { revisionId: deployment.revision_id, namespace, at: this.clock() });
      if (last && last.revisionId !== deployment.revision_id) {
        link.logger.info({ deployment: deployment.deployment_name, revision: deployment.revision_id }, 'applied the revision that serves again');
      }
    } catch (error) {
      link.logger.warn({ deployment: deployment.deployment_name, error: errorMessage(error) }, 'could not apply the running deployment; will retry');
    }
  }

  /** One pass of a rollout; true while it goes on. */
  private async rollOut(deployment: DesiredDeploymentView, namespace: string, link: AgentLink): Promise<boolean> {
    let rollout = this.rollouts.get(deployment.revision_id);
    if (!rollout) {
      const outcome = await link.reportRevision(deployment, 'DEPLOYING', {});
      if (outcome !== 'applied' && outcome !== 'unchanged') return false;
      rollout = { deadline: this.clock() + Math.max(1, deployment.deploy_timeout_seconds) * 1000, applied: false, lines: [] };
      this.rollouts.set(deployment.revision_id, rollout);
    }
    const note = (level: LogLine['level'], message: string) => {
      rollout.lines.push({ level, message, timestamp: new Date(this.clock()).toISOString() });
      link.logger.info({ deployment: deployment.deployment_name, deployLog: level }, message);
    };
    const timeout = `the deploy timeout of ${deployment.deploy_timeout_seconds} s (source_config.deploy_timeout_seconds)`;

    if (!rollout.applied) {
      try {
        const result = await this.applier.apply(this.manifestOf(deployment, namespace, link), link.signal);
        rollout.applied = true;
        this.applied.set(deployment.deployment_id, { revisionId: deployment.revision_id, namespace, at: this.clock() });
        const pruned = result.pruned.length > 0 ? `; removed ${result.pruned.map((ref) => `${ref.kind}/${ref.name}`).join(', ')}` : '';
        note('INFO', `Applied ${result.applied.length} objects to namespace ${namespace}${pruned}`);
      } catch (error) {
        if (link.signal.aborted) return false;
        const refused = error instanceof ManifestError || (error instanceof KubernetesRequestError && error.code !== null && REFUSED.has(error.code));
        if (refused || this.clock() >= rollout.deadline) {
          await this.fail(deployment, rollout, link, refused ? errorMessage(error) : `Could not apply within ${timeout}: ${errorMessage(error)}`);
          return false;
        }
        note('WARNING', `Could not apply yet, retrying: ${errorMessage(error)}`);
        return true;
      }
    }

    let readiness;
    try {
      readiness = await this.applier.readiness({ namespace, deploymentId: deployment.deployment_id, revisionId: deployment.revision_id }, link.signal);
    } catch (error) {
      if (link.signal.aborted) return false;
      if (this.clock() >= rollout.deadline) {
        await this.fail(deployment, rollout, link, `Could not read the rollout's state within ${timeout}: ${errorMessage(error)}`);
        return false;
      }
      note('WARNING', `Could not read the rollout's state, retrying: ${errorMessage(error)}`);
      return true;
    }
    if (readiness.ready) {
      const url = serviceUrl(deployment, namespace);
      note('INFO', `Ready: every pod of the revision answers GET /ok; serving at ${url} inside the cluster`);
      this.rollouts.delete(deployment.revision_id);
      await link.reportRevision(deployment, 'DEPLOYED', { url, logs: rollout.lines });
      return false;
    }
    const expired = this.clock() >= rollout.deadline;
    if (readiness.failure && (FAIL_AT_ONCE.has(readiness.failure.reason) || expired)) {
      await this.fail(deployment, rollout, link, readiness.failure.message);
      return false;
    }
    if (expired) {
      await this.fail(deployment, rollout, link, `Not ready within ${timeout}: waiting for ${readiness.waitingFor ?? 'the rollout'}.`);
      return false;
    }
    // A failure that may yet mend (an image pull retried, a crash while the database starts) is logged once and waited on.
    const waiting = readiness.failure ? `${readiness.failure.reason}: ${readiness.failure.message}` : `Waiting: ${readiness.waitingFor}`;
    if (waiting !== rollout.lastWaiting) note(readiness.failure ? 'WARNING' : 'INFO', waiting);
    rollout.lastWaiting = waiting;
    return true;
  }

  private async fail(deployment: DesiredDeploymentView, rollout: Rollout, link: AgentLink, message: string): Promise<void> {
    rollout.lines.push({ level: 'ERROR', message, timestamp: new Date(this.clock()).toISOString() });
    this.rollouts.delete(deployment.revision_id);
    await link.markFailed(deployment.revision_id);
    await link.reportRevision(deployment, 'DEPLOY_FAILED', { message, logs: rollout.lines });
  }

  /**
   * Deletes what this listener applied for deployments it no longer runs there (moved to
   * another namespace, or deleted while the agent was away and already reported gone).
   * Objects without this listener's label are never touched. Runs when the desired state
   * changed, and every resync period.
   */
  private async removeOrphans(generation: number, wanted: Map<string, string>, deleting: Set<string>, link: AgentLink): Promise<void> {
    const now = this.clock();
    if (generation === this.lastOrphanScan.generation && now - this.lastOrphanScan.at < this.settings.resyncSeconds * 1000) return;
    const namespaces = new Set([this.defaultNamespace, ...wanted.values(), ...[...this.applied.values()].map((entry) => entry.namespace)]);
    try {
      for (const namespace of namespaces) {
        const orphans = new Set<string>();
        for (const object of await this.applier.list(namespace, undefined, link.signal)) {
          if (object.listenerId !== link.listenerId || deleting.has(object.deploymentId)) continue;
          if (wanted.get(object.deploymentId) !== namespace) orphans.add(object.deploymentId);
        }
        for (const deploymentId of orphans) {
          const deleted = await this.applier.delete({ namespace, deploymentId }, link.signal);
          if (this.applied.get(deploymentId)?.namespace === namespace) this.applied.delete(deploymentId);
          link.logger.info(
            { deployment: deploymentId, namespace, objects: deleted.length },
            'deleted objects of a deployment this listener no longer runs here',
          );
        }
      }
      this.lastOrphanScan = { generation, at: now };
    } catch (error) {
      link.logger.warn({ error: errorMessage(error) }, 'could not look for objects of deployments this listener no longer runs; will retry');
    }
  }

  private manifestOf(deployment: DesiredDeploymentView, namespace: string, link: AgentLink): DesiredDeployment {
    return {
      deploymentId: deployment.deployment_id,
      deploymentName: deployment.deployment_name,
      revisionId: deployment.revision_id,
      namespace,
      image: deployment.image_uri,
      env: Object.fromEntries(deployment.secrets.map((secret) => [secret.name, secret.value])),
      resourceSpec: deployment.resource_spec,
      listenerId: link.listenerId,
    };
  }
}

/** The API server's Service inside the cluster: what other workloads there call. */
export function serviceUrl(deployment: Pick<DesiredDeploymentView, 'deployment_id' | 'deployment_name'>, namespace: string): string {
  const names = kubernetesNames(deployment.deployment_name, deployment.deployment_id);
  return `http://${names.apiServer}.${namespace}.svc.cluster.local:${API_PORT}`;
}
