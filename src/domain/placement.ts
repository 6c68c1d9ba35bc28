import { fail, sourceConfigError } from './errors.js';

export interface ListenerSummary {
  id: string;
  namespaces: string[];
  /** `k8s` listeners deploy into namespaces; container hosts (`docker`, `podman`) have none. */
  computeType?: string;
}

/**
 * Where a deployment runs. In a workspace with listeners, an image deployment must name
 * one: the wording of the error is what CLI and GO clients look for
 * (`listener_id' is required`). The namespace must be one the listener watches; a
 * listener with a single namespace implies it.
 */
export function resolvePlacement(input: {
  requiresListener: boolean;
  listenerId: string | null;
  namespace: string | null;
  listener: ListenerSummary | undefined;
  availableListenerIds: string[];
}): { listenerId: string; namespace: string | null } | null {
  const { listenerId, namespace, listener, availableListenerIds } = input;
  if (listenerId === null) {
    if (input.requiresListener && availableListenerIds.length > 0) {
      const ids = availableListenerIds.map((id) => `'${id}'`).join(', ');
      throw fail(
        'listener_required',
        `Source configuration error: 'source_config.listener_id' is required for workspace with available listener IDs: [${ids}]`,
      );
    }
    if (namespace !== null) {
      throw sourceConfigError("'source_config.listener_config' needs 'source_config.listener_id'.");
    }
    return null;
  }
  if (!listener) {
    throw sourceConfigError(`listener ID ${listenerId} was not found in this workspace.`);
  }
  if (listener.computeType !== undefined && listener.computeType !== 'k8s' && namespace === null && listener.namespaces.length === 0) {
    return { listenerId, namespace: null };
  }
  if (namespace !== null) {
    if (!listener.namespaces.includes(namespace)) {
      throw sourceConfigError(`namespace '${namespace}' is not one of listener ${listenerId}'s namespaces: [${quoted(listener.namespaces)}].`);
    }
    return { listenerId, namespace };
  }
  if (listener.namespaces.length === 1) return { listenerId, namespace: listener.namespaces[0] as string };
  if (listener.namespaces.length === 0) {
    throw sourceConfigError(`listener ${listenerId} has no namespaces; add one with PATCH /v2/listeners/${listenerId}.`);
  }
  throw sourceConfigError(`'source_config.listener_config.k8s_namespace' is required; listener ${listenerId} watches [${quoted(listener.namespaces)}].`);
}

function quoted(values: string[]): string {
  return values.map((v) => `'${v}'`).join(', ');
}
