import type { CoreV1Event, V1ContainerStatus, V1Deployment, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { API_PORT, HEALTH_PATH } from './server-workloads.js';
import { type Component, LABEL } from './names.js';

/**
 * Whether a deployment's revision is running, read from what Kubernetes reports. A failure
 * is something that will not fix itself: a person has to act, and its message says how.
 * Anything else that is not ready yet is described in `waitingFor`.
 */
export interface Readiness {
  ready: boolean;
  failure?: { reason: string; message: string };
  waitingFor?: string;
}

export interface ReadinessInput {
  namespace: string;
  revisionId: string;
  /** The deployment's Deployments and StatefulSets (labelled with its id). */
  workloads: (V1Deployment | V1StatefulSet)[];
  /** The deployment's pods. */
  pods: V1Pod[];
  /** Events of those pods (probe failures are only reported there). */
  events: CoreV1Event[];
}

/** A readiness or liveness probe failing this often is not a slow start any more. */
export const PROBE_FAILURES_REPORTED = 3;

const DESCRIPTION: Record<Component, string> = {
  deployment: 'deployment',
  'api-server': 'API server',
  queue: 'queue worker',
  postgres: 'database',
  redis: 'Redis',
};

/** The resource_spec fields that size each component, for messages that say what to change. */
const SIZE_FIELDS: Record<Component, { requests: string; memoryLimit: string }> = {
  deployment: { requests: 'cpu and memory_mb', memoryLimit: 'memory_limit_mb' },
  'api-server': { requests: 'cpu and memory_mb', memoryLimit: 'memory_limit_mb' },
  queue: { requests: 'queue_cpu and queue_memory_mb', memoryLimit: 'queue_memory_limit_mb' },
  postgres: { requests: 'db_cpu and db_memory_mb', memoryLimit: 'db_memory_limit_mb' },
  redis: { requests: 'redis_memory_mb', memoryLimit: 'redis_memory_mb' },
};

const WAITING_FAILURES = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

export function assessReadiness(input: ReadinessInput): Readiness {
  const apiServer = input.workloads.find((w) => w.kind === 'Deployment' && componentOf(w) === 'api-server');
  if (!apiServer) {
    return failed(
      'NotFound',
      `The API server's Deployment is missing from namespace ${input.namespace}: it was deleted or never applied. Apply the deployment again.`,
    );
  }
  const pods = input.pods.filter((pod) => !pod.metadata?.deletionTimestamp && belongsToRevision(pod, input.revisionId));
  for (const pod of pods) {
    const failure = podFailure(pod, input);
    if (failure) return { ready: false, failure };
  }
  for (const workload of input.workloads) {
    const failure = workloadFailure(workload);
    if (failure) return { ready: false, failure };
  }
  const waiting = input.workloads.flatMap((w) => workloadWaiting(w, input.revisionId) ?? []);
  waiting.push(...pods.flatMap((pod) => startupWaiting(pod, input.events) ?? []));
  return waiting.length > 0 ? { ready: false, waitingFor: waiting.join('; ') } : { ready: true };
}

export function componentOf(object: { metadata?: { labels?: Record<string, string> } }): Component {
  return (object.metadata?.labels?.[LABEL.component] ?? 'api-server') as Component;
}

/** Server pods of older revisions are on their way out; the database and Redis are shared by all revisions. */
function belongsToRevision(pod: V1Pod, revisionId: string): boolean {
  const component = componentOf(pod);
  if (component !== 'api-server' && component !== 'queue') return true;
  return pod.metadata?.labels?.[LABEL.revisionId] === revisionId;
}

function failed(reason: string, message: string): Readiness {
  return { ready: false, failure: { reason, message } };
}

function podFailure(pod: V1Pod, input: ReadinessInput): Readiness['failure'] {
  const component = componentOf(pod);
  const what = DESCRIPTION[component];
  const name = pod.metadata?.name ?? '(unnamed pod)';
  const unschedulable = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable');
  if (unschedulable) {
    const storage = /PersistentVolumeClaim/.test(unschedulable.message ?? '')
      ? ' Its volume claim is not bound: check that the cluster has a default StorageClass (or a volume) for resource_spec.db_storage_gi.'
      : ` Lower resource_spec.${SIZE_FIELDS[component].requests}, or add capacity or matching nodes to the cluster.`;
    return {
      reason: 'Unschedulable',
      message: `The ${what} pod ${name} cannot be scheduled in namespace ${input.namespace}: ${unschedulable.message ?? 'no node fits it'}.${storage}`,
    };
  }
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const status of statuses) {
    const reason = status.state?.waiting?.reason;
    if (reason && WAITING_FAILURES.has(reason)) return containerFailure(pod, status, reason, input.namespace);
  }
  return probeFailure(pod, input);
}

function containerFailure(pod: V1Pod, status: V1ContainerStatus, reason: string, namespace: string): NonNullable<Readiness['failure']> {
  const component = componentOf(pod);
  const what = DESCRIPTION[component];
  const podName = pod.metadata?.name ?? '';
  const detail = status.state?.waiting?.message ? `: ${status.state.waiting.message}` : '';
  const image = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === status.name)?.image ?? status.image;
  switch (reason) {
    case 'ErrImagePull':
    case 'ImagePullBackOff':
      return {
        reason,
        message:
          `Kubernetes cannot pull image ${image} for the ${what} (container ${status.name})${detail}. ` +
          'Check that the image exists and, for a private registry, that resource_spec.image_pull_secrets names a Secret in the namespace that can read it.',
      };
    case 'InvalidImageName':
      return { reason, message: `Image ${image} of the ${what} (container ${status.name}) is not a valid image reference${detail}.` };
    case 'CrashLoopBackOff': {
      const last = status.lastState?.terminated;
      const exit = last ? ` (last exit code ${last.exitCode}${last.reason ? `, ${last.reason}` : ''})` : '';
      const oom = last?.reason === 'OOMKilled' ? ` It ran out of memory: raise resource_spec.${SIZE_FIELDS[component].memoryLimit}.` : '';
      return {
        reason,
        message:
          `The ${what} container ${status.name} keeps exiting: restarted ${status.restartCount} times${exit}.${oom} ` +
          `Its output says why: kubectl logs -n ${namespace} ${podName} -c ${status.name} --previous`,
      };
    }
    case 'CreateContainerConfigError':
      return {
        reason,
        message: `The ${what} container ${status.name} cannot be created${detail}. A Secret, ConfigMap or key it refers to (in env, envFrom or volumes) is missing in namespace ${namespace}.`,
      };
    default:
      return { reason, message: `The ${what} container ${status.name} cannot start${detail}.` };
  }
}

/** Readiness or liveness probes failing again and again on a started container: the server runs but does not answer as it should. */
function probeFailure(pod: V1Pod, input: ReadinessInput): Readiness['failure'] {
  const component = componentOf(pod);
  const podName = pod.metadata?.name ?? '';
  for (const event of probeEvents(pod, input.events)) {
    const kind = event.message?.match(/^(Readiness|Liveness) probe failed/)?.[1];
    const count = eventCount(event);
    if (!kind || count < PROBE_FAILURES_REPORTED) continue;
    const probe = component === 'api-server' || component === 'queue' ? `GET ${HEALTH_PATH} on port ${API_PORT}` : 'its health command';
    return {
      reason: `${kind}ProbeFailed`,
      message:
        `The ${DESCRIPTION[component]} pod ${podName} fails its ${kind.toLowerCase()} probe (${probe}), ${count} times so far: ${event.message}. ` +
        `The server runs but does not answer as healthy; its logs say why: kubectl logs -n ${input.namespace} ${podName}`,
    };
  }
  return undefined;
}

function startupWaiting(pod: V1Pod, events: CoreV1Event[]): string | null {
  const starting = probeEvents(pod, events).find((e) => e.message?.startsWith('Startup probe failed'));
  return starting ? `the ${DESCRIPTION[componentOf(pod)]} pod ${pod.metadata?.name} is starting (${starting.message})` : null;
}

function probeEvents(pod: V1Pod, events: CoreV1Event[]): CoreV1Event[] {
  return events.filter((e) => e.reason === 'Unhealthy' && e.involvedObject?.kind === 'Pod' && e.involvedObject.name === pod.metadata?.name);
}

function eventCount(event: CoreV1Event): number {
  return event.series?.count ?? event.count ?? 1;
}

function workloadFailure(workload: V1Deployment | V1StatefulSet): Readiness['failure'] {
  if (workload.kind !== 'Deployment') return undefined;
  const what = DESCRIPTION[componentOf(workload)];
  const conditions = (workload as V1Deployment).status?.conditions ?? [];
  const replicaFailure = conditions.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  if (replicaFailure) {
    return {
      reason: 'ReplicaFailure',
      message: `Kubernetes refuses to create ${what} pods: ${replicaFailure.message ?? replicaFailure.reason}. A ResourceQuota, LimitRange or admission policy of the namespace is the usual cause.`,
    };
  }
  const progressing = conditions.find((c) => c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded');
  if (progressing) {
    return {
      reason: 'ProgressDeadlineExceeded',
      message: `The ${what} did not finish rolling out in time: ${progressing.message ?? 'progress deadline exceeded'}.`,
    };
  }
  return undefined;
}

function workloadWaiting(workload: V1Deployment | V1StatefulSet, revisionId: string): string | null {
  const component = componentOf(workload);
  const what = DESCRIPTION[component];
  const templateRevision = workload.spec?.template.metadata?.labels?.[LABEL.revisionId];
  if ((component === 'api-server' || component === 'queue') && templateRevision !== revisionId) {
    return `the ${what} still runs revision ${templateRevision ?? '(unknown)'}`;
  }
  const status = workload.status;
  const generation = workload.metadata?.generation ?? 0;
  if ((status?.observedGeneration ?? 0) < generation) return `Kubernetes has not yet acted on the latest change to the ${what}`;
  const wanted = workload.spec?.replicas ?? 1;
  const updated = status?.updatedReplicas ?? 0;
  const ready = status?.readyReplicas ?? 0;
  const available = status?.availableReplicas ?? 0;
  if (updated < wanted) return `${updated} of ${wanted} ${what} pods updated`;
  if ((status?.replicas ?? 0) > updated) return `${(status?.replicas ?? 0) - updated} old ${what} pods still stopping`;
  if (workload.kind === 'StatefulSet') {
    const set = workload as V1StatefulSet;
    if (ready < wanted) return `${ready} of ${wanted} ${what} pods ready`;
    if (set.status?.updateRevision && set.status.currentRevision !== set.status.updateRevision) return `the ${what} is still rolling out`;
    return null;
  }
  if (available < wanted) return `${available} of ${wanted} ${what} pods available`;
  return null;
}
