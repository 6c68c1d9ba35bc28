import { randomBytes } from 'node:crypto';
import {
  type CoreV1Event,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1APIResourceList,
  type V1Deployment,
  type V1Pod,
  type V1Secret,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { POSTGRES_PASSWORD_KEY } from './backing-services.js';
import { boundConfiguration } from '../../kubernetes/client.js';
import { KubernetesRequestError, translateError } from './kube-errors.js';
import { type DesiredDeployment, provisionsDatabase, renderDeployment, withOwner } from './manifests.js';
import { type Component, kubernetesNames, LABEL, managedSelector } from './names.js';
import { assessReadiness, componentOf, type Readiness } from './readiness.js';
import { assertDnsLabel, assertLabelValue, ManifestError } from './syntax.js';

export const FIELD_MANAGER = 'berth-listener';

/**
 * The kinds Berth creates for a deployment, in the order they are deleted (autoscalers
 * before what they scale, workloads before the Secrets they read). PersistentVolumeClaims
 * are never applied, but the database's claim carries the deployment's labels, so
 * deleting a deployment deletes its data too.
 */
export const MANAGED_KINDS = [
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim' },
] as const;

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface ManagedObject extends ObjectRef {
  uid: string;
  deploymentId: string;
  revisionId: string | null;
  /** The listener that applied it; null for objects applied without one. */
  listenerId: string | null;
  component: Component;
}

export interface AppliedDeployment {
  /** What was applied, in order, with the uids the cluster gave them. */
  applied: (ObjectRef & { uid: string })[];
  /** Objects of this deployment that the desired state no longer has, deleted. */
  pruned: ObjectRef[];
}

export interface DeploymentRef {
  namespace: string;
  deploymentId: string;
}

export interface KubernetesApplierOptions {
  fieldManager?: string;
  /** Bound on each operation (apply, readiness, delete, list), on top of the caller's signal. Default 60 s. */
  timeoutMs?: number;
}

/** Server pods checked for probe events per readiness call: enough to find the cause, few enough to stay cheap. */
const PODS_EXAMINED_FOR_EVENTS = 5;

/**
 * Applies deployments to a Kubernetes cluster with server-side apply, reads whether they
 * are ready, lists what Berth manages and deletes a deployment's objects. Every operation
 * takes an optional AbortSignal and is bounded by a timeout; failures are
 * KubernetesRequestError with a message that says what to do.
 */
export class KubernetesApplier {
  private readonly fieldManager: string;
  private readonly timeoutMs: number;
  /** Discovery answers (which resource serves which kind), shared by all operations. */
  private readonly discovery: Record<string, V1APIResourceList> = {};

  constructor(
    private readonly kubeConfig: KubeConfig,
    options: KubernetesApplierOptions = {},
  ) {
    this.fieldManager = options.fieldManager ?? FIELD_MANAGER;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /**
   * Applies every object of the deployment: the anchor ConfigMap first, then the rest
   * owned by it (an owner reference needs the anchor's uid, which only exists once it is
   * applied). Then deletes what an earlier revision had and this one does not (a queue
   * worker or autoscaler no longer asked for), except the database: a switch to
   * POSTGRES_URI_CUSTOM leaves the old database in place until the deployment is deleted.
   */
  async apply(desired: DesiredDeployment, signal?: AbortSignal): Promise<AppliedDeployment> {
    assertDnsLabel('namespace', desired.namespace);
    const api = this.client(signal);
    const names = kubernetesNames(desired.deploymentName, desired.deploymentId);
    let databasePassword = desired.databasePassword;
    if (provisionsDatabase(desired.env) && !databasePassword) {
      databasePassword = await this.databasePassword(api, desired.namespace, names.postgres);
    }
    const [anchor, ...rest] = renderDeployment({ ...desired, databasePassword });
    const appliedAnchor = await this.applyObject(api, anchor as KubernetesObject);
    const applied = [appliedRef(appliedAnchor)];
    for (const object of rest) applied.push(appliedRef(await this.applyObject(api, withOwner(object, appliedAnchor))));
    const pruned = await this.prune(api, desired, applied);
    return { applied, pruned };
  }

  /** Whether `revisionId` of the deployment runs and is ready, or what it waits for, or why it cannot start. */
  async readiness(target: DeploymentRef & { revisionId: string }, signal?: AbortSignal): Promise<Readiness> {
    checkTarget(target);
    const api = this.client(signal);
    const selector = `${LABEL.deploymentId}=${target.deploymentId}`;
    const [deployments, statefulSets, pods] = await Promise.all([
      this.listKind<V1Deployment>(api, 'apps/v1', 'Deployment', target.namespace, selector),
      this.listKind<V1StatefulSet>(api, 'apps/v1', 'StatefulSet', target.namespace, selector),
      this.listKind<V1Pod>(api, 'v1', 'Pod', target.namespace, selector),
    ]);
    const unready = pods.filter((pod) => !pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    const events = (
      await Promise.all(
        unready
          .slice(0, PODS_EXAMINED_FOR_EVENTS)
          .map((pod) =>
            this.listKind<CoreV1Event>(api, 'v1', 'Event', target.namespace, undefined, `involvedObject.name=${pod.metadata?.name},reason=Unhealthy`),
          ),
      )
    ).flat();
    return assessReadiness({ namespace: target.namespace, revisionId: target.revisionId, workloads: [...deployments, ...statefulSets], pods, events });
  }

  /**
   * Deletes every object of the deployment: the anchor (Kubernetes then collects what it
   * owns), then, by label, whatever is left, including the database's volume claim, so
   * nothing survives even if an owner reference was lost. Returns what was deleted here.
   */
  async delete(target: DeploymentRef, signal?: AbortSignal): Promise<ObjectRef[]> {
    checkTarget(target);
    const api = this.client(signal);
    const deleted: ObjectRef[] = [];
    // The anchor first: in a cluster its garbage collection then removes the rest even if this call stops halfway.
    const anchorFirst = [{ apiVersion: 'v1', kind: 'ConfigMap' }, ...MANAGED_KINDS.filter((k) => k.kind !== 'ConfigMap')];
    for (const { apiVersion, kind } of anchorFirst) {
      const objects = await this.listKind<KubernetesObject>(api, apiVersion, kind, target.namespace, managedSelector(target.deploymentId));
      for (const object of objects) {
        const ref = { apiVersion, kind, namespace: target.namespace, name: object.metadata?.name ?? '' };
        if (await this.deleteObject(api, ref)) deleted.push(ref);
      }
    }
    return deleted;
  }

  /** Everything Berth manages in the namespace (or of one deployment): for drift correction and orphan cleanup. */
  async list(namespace: string, deploymentId?: string, signal?: AbortSignal): Promise<ManagedObject[]> {
    assertDnsLabel('namespace', namespace);
    if (deploymentId !== undefined) checkTarget({ namespace, deploymentId });
    return this.listManaged(this.client(signal), namespace, deploymentId);
  }

  private async listManaged(api: KubernetesObjectApi, namespace: string, deploymentId?: string): Promise<ManagedObject[]> {
    const found = await Promise.all(
      MANAGED_KINDS.map(async ({ apiVersion, kind }) =>
        (await this.listKind<KubernetesObject>(api, apiVersion, kind, namespace, managedSelector(deploymentId))).map((object) =>
          managed(apiVersion, kind, namespace, object),
        ),
      ),
    );
    return found.flat();
  }

  private async prune(api: KubernetesObjectApi, desired: DesiredDeployment, applied: ObjectRef[]): Promise<ObjectRef[]> {
    const wanted = new Set(applied.map((ref) => `${ref.kind}/${ref.name}`));
    const existing = await this.listManaged(api, desired.namespace, desired.deploymentId);
    const pruned: ObjectRef[] = [];
    for (const object of existing) {
      if (wanted.has(`${object.kind}/${object.name}`) || object.kind === 'PersistentVolumeClaim' || object.component === 'postgres') continue;
      const ref = { apiVersion: object.apiVersion, kind: object.kind, namespace: object.namespace, name: object.name };
      if (await this.deleteObject(api, ref)) pruned.push(ref);
    }
    return pruned;
  }

  private async databasePassword(api: KubernetesObjectApi, namespace: string, secretName: string): Promise<string> {
    const ref = { apiVersion: 'v1', kind: 'Secret', namespace, name: secretName };
    let secret: V1Secret;
    try {
      secret = await api.read<V1Secret>({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace } });
    } catch (error) {
      const translated = translateError(error, 'read', ref, this.serverUrl());
      if (translated.code === 404) return randomBytes(24).toString('hex');
      throw translated;
    }
    const stored = secret.data?.[POSTGRES_PASSWORD_KEY];
    if (!stored) {
      throw new KubernetesRequestError(
        `Secret ${namespace}/${secretName} holds no "${POSTGRES_PASSWORD_KEY}": the database was created with a password Berth no longer has. Restore the key, or delete the deployment's database to start a new one.`,
        null,
      );
    }
    return Buffer.from(stored, 'base64').toString('utf8');
  }

  private async applyObject(api: KubernetesObjectApi, object: KubernetesObject): Promise<KubernetesObject> {
    try {
      return await api.patch(object, undefined, undefined, this.fieldManager, true, PatchStrategy.ServerSideApply);
    } catch (error) {
      throw translateError(error, 'apply', refOf(object), this.serverUrl());
    }
  }

  /** Deletes in the background (dependents go too); false when it was already gone. */
  private async deleteObject(api: KubernetesObjectApi, ref: ObjectRef): Promise<boolean> {
    try {
      await api.delete(
        { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } },
        undefined,
        undefined,
        undefined,
        undefined,
        'Background',
      );
      return true;
    } catch (error) {
      const translated = translateError(error, 'delete', ref, this.serverUrl());
      if (translated.code === 404) return false;
      throw translated;
    }
  }

  private async listKind<T extends KubernetesObject>(
    api: KubernetesObjectApi,
    apiVersion: string,
    kind: string,
    namespace: string,
    labelSelector?: string,
    fieldSelector?: string,
  ): Promise<T[]> {
    try {
      const list = await api.list<T>(apiVersion, kind, namespace, undefined, undefined, undefined, fieldSelector, labelSelector);
      // List items carry no apiVersion or kind of their own.
      return list.items.map((item) => ({ ...item, apiVersion, kind }));
    } catch (error) {
      throw translateError(error, 'list', { apiVersion, kind, namespace, name: '' }, this.serverUrl());
    }
  }

  /** A client whose every request is bound to this operation's signal and timeout. */
  private client(signal: AbortSignal | undefined): KubernetesObjectApi {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster)
      throw new KubernetesRequestError('The kubeconfig names no current cluster: set a current context, or run in a pod with a service account.', null);
    const bound = signal ? AbortSignal.any([signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs);
    const configuration = boundConfiguration(this.kubeConfig, cluster, bound);
    return new SharedDiscoveryObjectApi(configuration, this.discovery);
  }

  private serverUrl(): string {
    return this.kubeConfig.getCurrentCluster()?.server ?? '(no cluster)';
  }
}

/** KubernetesObjectApi asks the API server which resource serves a kind; this keeps the answers across operations. */
class SharedDiscoveryObjectApi extends KubernetesObjectApi {
  constructor(configuration: ConstructorParameters<typeof KubernetesObjectApi>[0], cache: Record<string, V1APIResourceList>) {
    super(configuration);
    this.apiVersionResourceCache = cache;
  }
}

/** The id goes into label selectors: it must be a non-empty label value, so it can only ever select this deployment. */
function checkTarget(target: DeploymentRef): void {
  assertDnsLabel('namespace', target.namespace);
  if (target.deploymentId === '') throw new ManifestError('deploymentId', 'deploymentId must not be empty.');
  assertLabelValue('deploymentId', target.deploymentId);
}

function refOf(object: KubernetesObject): ObjectRef {
  return { apiVersion: object.apiVersion ?? '', kind: object.kind ?? '', namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '' };
}

function appliedRef(object: KubernetesObject): ObjectRef & { uid: string } {
  return { ...refOf(object), uid: object.metadata?.uid ?? '' };
}

function managed(apiVersion: string, kind: string, namespace: string, object: KubernetesObject): ManagedObject {
  const labels = object.metadata?.labels ?? {};
  return {
    apiVersion,
    kind,
    namespace,
    name: object.metadata?.name ?? '',
    uid: object.metadata?.uid ?? '',
    deploymentId: labels[LABEL.deploymentId] ?? '',
    revisionId: labels[LABEL.revisionId] ?? null,
    listenerId: labels[LABEL.listenerId] ?? null,
    component: componentOf(object),
  };
}
