import { ApiException } from '@kubernetes/client-node';
import { statusMessage } from '../../kubernetes/client.js';

/**
 * A Kubernetes request that failed, with a message that says what to do. It never carries
 * the request body (a Secret's values) nor the raw response headers.
 */
export class KubernetesRequestError extends Error {
  constructor(
    message: string,
    /** HTTP status from the API server; null when there was no answer. */
    readonly code: number | null,
  ) {
    super(message);
    this.name = 'KubernetesRequestError';
  }
}

interface Target {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

type Verb = 'apply' | 'read' | 'list' | 'delete';

const RBAC_VERBS: Record<Verb, string> = { apply: 'patch', read: 'get', list: 'list', delete: 'delete' };

export function translateError(error: unknown, verb: Verb, target: Target, server: string): KubernetesRequestError {
  if (error instanceof KubernetesRequestError) return error;
  const what = target.name ? `${target.kind} ${target.namespace}/${target.name}` : `${target.kind} objects in namespace ${target.namespace}`;
  if (error instanceof ApiException) {
    const code = error.code;
    const message = statusMessage(error.body);
    if (code === 401) {
      return new KubernetesRequestError(
        `The Kubernetes API at ${server} refused the listener's credentials (401): check its service account token or kubeconfig.`,
        code,
      );
    }
    if (code === 403) {
      return new KubernetesRequestError(
        `The listener may not ${RBAC_VERBS[verb]} ${what} (403: ${message}). Grant it with the Role in deploy/listener-kubernetes, or the cluster-wide overlay when it manages several namespaces.`,
        code,
      );
    }
    if (code === 404 && /^namespaces? "[^"]*" not found/.test(message)) {
      return new KubernetesRequestError(
        `Namespace ${target.namespace} does not exist: create it, or place the deployment in a namespace the listener manages (source_config.listener_config.k8s_namespace).`,
        code,
      );
    }
    if (code === 422) {
      const hint = /updates to statefulset spec/.test(message)
        ? " A StatefulSet's volume claim cannot change once created: resource_spec.db_storage_gi applies to new databases only (resize the claim itself if its StorageClass allows expansion)."
        : '';
      return new KubernetesRequestError(`Kubernetes refused ${what} as invalid: ${message}.${hint}`, code);
    }
    return new KubernetesRequestError(`Kubernetes answered ${code} to ${verb} ${what}: ${message}`, code);
  }
  const cause = error as Error & { code?: string; type?: string };
  if (cause?.name === 'AbortError' || cause?.type === 'aborted') {
    return new KubernetesRequestError(`The request to ${verb} ${what} was cancelled or timed out before the Kubernetes API at ${server} answered.`, null);
  }
  if (/Unrecognized API version and kind/.test(cause?.message ?? '')) {
    return new KubernetesRequestError(
      `The cluster at ${server} does not serve ${target.apiVersion} ${target.kind}: Berth needs Kubernetes 1.23 or newer.`,
      null,
    );
  }
  if (cause?.code || /fetch|ECONN|ENOTFOUND|socket/i.test(cause?.message ?? '')) {
    return new KubernetesRequestError(
      `Cannot reach the Kubernetes API at ${server} to ${verb} ${what} (${cause.code ?? cause.message}): check the listener's network access and kubeconfig.`,
      null,
    );
  }
  return new KubernetesRequestError(`Could not ${verb} ${what}: ${cause?.message ?? String(error)}`, null);
}
