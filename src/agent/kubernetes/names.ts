import { createHash } from 'node:crypto';

/**
 * Names of the objects of one deployment, derived from its name and id only, so every
 * render of the same deployment names the same objects (re-applying updates them in place).
 *
 * The base is the deployment name made DNS-safe and cut to 34 characters, then "-" and 8
 * hex characters of the SHA-256 of the deployment id: deployments whose names differ only
 * in case or past the cut, or that share a name across workspaces placed in one
 * namespace, still get distinct objects. The base is at most 43 characters, so the
 * longest name ("<base>-postgres") stays within 52: a StatefulSet's name also goes into
 * its pods' `controller-revision-hash` label (name, "-", 10 characters), which must fit
 * in 63. Every name starts with a letter, so Services (DNS-1035 labels) accept them too.
 */
export interface KubernetesNames {
  base: string;
  /** The ConfigMap every other object is owned by; deleting it deletes the deployment. */
  anchor: string;
  /** API-server Deployment, its ClusterIP Service and its HorizontalPodAutoscaler. */
  apiServer: string;
  /** Secret with the deployment's environment (secrets, settings, connection URIs). */
  env: string;
  queue: string;
  /** StatefulSet, its headless Service and the Secret with the database password. */
  postgres: string;
  redis: string;
}

const NAME_PART_LENGTH = 34;

export function kubernetesNames(deploymentName: string, deploymentId: string): KubernetesNames {
  const base = `${dnsSafe(deploymentName).slice(0, NAME_PART_LENGTH).replace(/-+$/, '')}-${shortHash(deploymentId)}`;
  return {
    base,
    anchor: base,
    apiServer: base,
    env: `${base}-env`,
    queue: `${base}-queue`,
    postgres: `${base}-postgres`,
    redis: `${base}-redis`,
  };
}

/** Lowercase letters, digits and single hyphens, starting with a letter ("agent" if nothing is left). */
function dnsSafe(name: string): string {
  const safe = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^[^a-z]+/, '')
    .replace(/-+$/, '');
  return safe === '' ? 'agent' : safe;
}

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 8);
}

export const MANAGED_BY = 'berth';

/** Label keys Berth sets and selects on; resource_spec.labels may not set them. */
export const LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  instance: 'app.kubernetes.io/instance',
  component: 'app.kubernetes.io/component',
  deploymentId: 'berth.dev/deployment-id',
  revisionId: 'berth.dev/revision-id',
  /** The listener that applied the object: a listener cleans up only its own. */
  listenerId: 'berth.dev/listener-id',
} as const;

export const ANNOTATION = { deploymentName: 'berth.dev/deployment-name' } as const;

export type Component = 'deployment' | 'api-server' | 'queue' | 'postgres' | 'redis';

/** Label selector of everything Berth manages in a namespace, or of one deployment's objects. */
export function managedSelector(deploymentId?: string): string {
  const managed = `${LABEL.managedBy}=${MANAGED_BY}`;
  return deploymentId === undefined ? managed : `${managed},${LABEL.deploymentId}=${deploymentId}`;
}
