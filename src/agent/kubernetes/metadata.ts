import type { V1ObjectMeta } from '@kubernetes/client-node';
import { type Component, LABEL, MANAGED_BY } from './names.js';

/** Who the objects belong to; every label value here has been checked by the renderer. */
export interface Owner {
  namespace: string;
  deploymentId: string;
  revisionId: string;
  /** `app.kubernetes.io/instance`: the deployment's base name. */
  instance: string;
  /** From resource_spec.labels / annotations: on every object, and on the server's pod templates. */
  userLabels: Record<string, string>;
  userAnnotations: Record<string, string>;
  listenerId?: string;
}

/**
 * Labels that never change for the life of a deployment. Selectors and the templates of
 * objects Kubernetes keeps immutable (volumeClaimTemplates) or that must not restart on a
 * new revision (the database and Redis pods) use only these.
 */
export function stableLabels(owner: Owner, component: Component): Record<string, string> {
  return {
    [LABEL.managedBy]: MANAGED_BY,
    [LABEL.instance]: owner.instance,
    [LABEL.component]: component,
    [LABEL.deploymentId]: owner.deploymentId,
  };
}

/** Selects a component's pods: stable, since a Deployment's or StatefulSet's selector cannot change. */
export function selectorLabels(owner: Owner, component: Component): Record<string, string> {
  return { [LABEL.deploymentId]: owner.deploymentId, [LABEL.component]: component };
}

/** Labels of every object: the user's, then Berth's (which the user may not override), with the revision. */
export function objectLabels(owner: Owner, component: Component): Record<string, string> {
  return {
    ...owner.userLabels,
    ...stableLabels(owner, component),
    [LABEL.revisionId]: owner.revisionId,
    ...(owner.listenerId ? { [LABEL.listenerId]: owner.listenerId } : {}),
  };
}

export function objectMetadata(owner: Owner, name: string, component: Component): V1ObjectMeta {
  return {
    name,
    namespace: owner.namespace,
    labels: objectLabels(owner, component),
    ...(Object.keys(owner.userAnnotations).length > 0 ? { annotations: { ...owner.userAnnotations } } : {}),
  };
}
