import { ApiException, type KubeConfig, type KubernetesObject, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { DriverError } from '../../engine/drivers/types.js';
import { boundConfiguration, statusMessage } from '../../kubernetes/client.js';

export const FIELD_MANAGER = 'berth-builder';

type Verb = 'patch' | 'get' | 'list' | 'delete';

/** The calls the build executor makes, each bound to the build's signal and a timeout; failures say what to do. */
export class KubeCalls {
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly namespace: string,
    private readonly timeoutMs = 30_000,
  ) {}

  async apply<T extends KubernetesObject>(object: T, signal: AbortSignal): Promise<T> {
    try {
      return (await this.#api(signal).patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply)) as T;
    } catch (error) {
      throw this.#failure(error, 'patch', object.kind ?? '', object.metadata?.name);
    }
  }

  async list<T extends KubernetesObject>(apiVersion: string, kind: string, labelSelector: string, signal: AbortSignal): Promise<T[]> {
    try {
      const list = await this.#api(signal).list<T>(apiVersion, kind, this.namespace, undefined, undefined, undefined, undefined, labelSelector);
      return list.items;
    } catch (error) {
      throw this.#failure(error, 'list', kind);
    }
  }

  async read<T extends KubernetesObject>(apiVersion: string, kind: string, name: string, signal: AbortSignal): Promise<T | undefined> {
    try {
      return await this.#api(signal).read<T>({ apiVersion, kind, metadata: { name, namespace: this.namespace } });
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw this.#failure(error, 'get', kind, name);
    }
  }

  /** Deletes in the background (a Job's pods go with it); false when it was already gone. */
  async delete(apiVersion: string, kind: string, name: string, signal: AbortSignal): Promise<boolean> {
    try {
      await this.#api(signal).delete(
        { apiVersion, kind, metadata: { name, namespace: this.namespace } },
        undefined,
        undefined,
        undefined,
        undefined,
        'Background',
      );
      return true;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return false;
      throw this.#failure(error, 'delete', kind, name);
    }
  }

  #api(signal: AbortSignal): KubernetesObjectApi {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new DriverError('The kubeconfig names no current cluster: run the runner in a pod with its service account, or set a current context.');
    const bound = AbortSignal.any([signal, AbortSignal.timeout(this.timeoutMs)]);
    return new KubernetesObjectApi(boundConfiguration(this.kubeConfig, cluster, bound));
  }

  /** Never carries a request body (the Secret's content), only the status message the API server gave. */
  #failure(error: unknown, verb: Verb, kind: string, name?: string): DriverError {
    const what = name ? `${kind} ${this.namespace}/${name}` : `${kind} objects in namespace ${this.namespace}`;
    if (error instanceof ApiException) {
      const message = statusMessage(error.body);
      if (error.code === 401)
        return new DriverError("The Kubernetes API refused the build runner's credentials (401): check its service account token or kubeconfig.");
      if (error.code === 403) {
        return new DriverError(
          `The build runner may not ${verb} ${what} (403: ${message}). Grant it with the Role in deploy/builder-kubernetes (docs/build-runners.md).`,
        );
      }
      if (error.code === 404 && /^namespaces? "[^"]*" not found/.test(message))
        return new DriverError(`Namespace ${this.namespace} does not exist: create it or set BERTH_BUILDER_NAMESPACE.`);
      return new DriverError(`Kubernetes answered ${error.code} to ${verb} ${what}: ${message}`);
    }
    const cause = error as Error | undefined;
    return new DriverError(`Could not ${verb} ${what} on the Kubernetes API: ${cause?.message ?? String(error)}`);
  }
}
