import type { V1Container, V1Deployment, V1EnvVar, V1PodSpec, V1Probe, V1Service, V2HorizontalPodAutoscaler } from '@kubernetes/client-node';
import { resources } from './backing-services.js';
import type { DesiredDeployment } from './manifests.js';
import { type Owner, objectLabels, objectMetadata, selectorLabels } from './metadata.js';
import type { Component, KubernetesNames } from './names.js';
import type { PodParts } from './pod-parts.js';
import type { Compute, Scale } from './sizing.js';
import { ManifestError } from './syntax.js';

/**
 * The agent server's workloads: the API server and the queue workers run the same image
 * with the same environment and pod additions; the API server is reached through a
 * ClusterIP Service; either may scale with a HorizontalPodAutoscaler on CPU.
 */

export const API_PORT = 8000;
export const HEALTH_PATH = '/ok';
/** What the public chart runs in queue pods: the LangGraph Python server's queue entrypoint (it serves /ok on PORT). */
export const DEFAULT_QUEUE_WORKER_COMMAND = ['python', '-m', 'langgraph_api.queue_entrypoint'];
/** The public chart's default N_JOBS_PER_WORKER. */
export const DEFAULT_JOBS_PER_WORKER = 10;
const CPU_TARGET_PERCENT = 80;

export interface Server {
  owner: Owner;
  names: KubernetesNames;
  parts: PodParts;
  desired: DesiredDeployment;
}

function httpProbe(overrides: Partial<V1Probe>): V1Probe {
  return { httpGet: { path: HEALTH_PATH, port: API_PORT }, timeoutSeconds: 5, ...overrides };
}

function serverContainer(server: Server, name: string, compute: Compute, extraEnv: V1EnvVar[]): V1Container {
  return {
    name,
    image: server.desired.image,
    ...(server.desired.imagePullPolicy ? { imagePullPolicy: server.desired.imagePullPolicy } : {}),
    ports: [{ name: 'http', containerPort: API_PORT, protocol: 'TCP' }],
    // `env` wins over `envFrom`: the port is fixed, since probes and the Service use it.
    env: [{ name: 'PORT', value: String(API_PORT) }, ...extraEnv],
    envFrom: [{ secretRef: { name: server.names.env } }],
    resources: resources(compute),
    // Up to 5 minutes to start (migrations, imports); after that readiness and liveness take over.
    startupProbe: httpProbe({ periodSeconds: 5, failureThreshold: 60 }),
    readinessProbe: httpProbe({ periodSeconds: 10, failureThreshold: 3 }),
    livenessProbe: httpProbe({ periodSeconds: 10, failureThreshold: 6 }),
    securityContext: { allowPrivilegeEscalation: false },
    ...(server.parts.volumeMounts.length > 0 ? { volumeMounts: server.parts.volumeMounts } : {}),
  };
}

export function apiContainer(server: Server, compute: Compute, hasQueue: boolean): V1Container {
  // With queue workers, the API server only serves requests (as the public chart sets it).
  return serverContainer(server, 'api-server', compute, hasQueue ? [{ name: 'N_JOBS_PER_WORKER', value: '0' }] : []);
}

export function queueContainer(server: Server, compute: Compute): V1Container {
  const command = server.desired.queueWorkerCommand === undefined ? DEFAULT_QUEUE_WORKER_COMMAND : server.desired.queueWorkerCommand;
  const jobs = String(server.desired.jobsPerWorker ?? DEFAULT_JOBS_PER_WORKER);
  return {
    ...serverContainer(server, 'queue', compute, [{ name: 'N_JOBS_PER_WORKER', value: jobs }]),
    ...(command ? { command: [...command] } : {}),
  };
}

export function autoscales(scale: Scale): boolean {
  return scale.max > Math.max(scale.min, 1);
}

export function requireCpuRequest(requested: boolean, cpuField: string, maxField: string): void {
  if (!requested) {
    throw new ManifestError(cpuField, `Autoscaling (resource_spec.${maxField}) scales on CPU use, which needs ${cpuField} greater than 0.`);
  }
}

/** The API server or the queue workers: same image, same environment, same pod additions. */
export function serverDeployment(
  server: Server,
  component: Extract<Component, 'api-server' | 'queue'>,
  name: string,
  scale: Scale,
  container: V1Container,
): V1Deployment {
  const { owner, parts } = server;
  const podSpec: V1PodSpec = {
    // The agent server does not talk to the Kubernetes API: no token unless an account is chosen.
    ...(parts.serviceAccountName ? { serviceAccountName: parts.serviceAccountName } : { automountServiceAccountToken: false }),
    enableServiceLinks: false,
    ...(parts.imagePullSecrets.length > 0 ? { imagePullSecrets: parts.imagePullSecrets } : {}),
    ...(parts.initContainers.length > 0 ? { initContainers: parts.initContainers } : {}),
    containers: [container, ...parts.sidecars],
    ...(parts.volumes.length > 0 ? { volumes: parts.volumes } : {}),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: objectMetadata(owner, name, component),
    spec: {
      // Left out when an HPA scales it, so re-applying does not undo the HPA's choice.
      ...(autoscales(scale) ? {} : { replicas: scale.min }),
      revisionHistoryLimit: 3,
      selector: { matchLabels: selectorLabels(owner, component) },
      template: {
        // The revision label is in the template, so every new revision rolls the pods.
        metadata: {
          labels: objectLabels(owner, component),
          ...(Object.keys(owner.userAnnotations).length > 0 ? { annotations: { ...owner.userAnnotations } } : {}),
        },
        spec: podSpec,
      },
    },
  };
}

export function apiService(owner: Owner, names: KubernetesNames): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: objectMetadata(owner, names.apiServer, 'api-server'),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(owner, 'api-server'),
      ports: [{ name: 'http', port: API_PORT, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}

export function autoscaler(owner: Owner, component: Extract<Component, 'api-server' | 'queue'>, name: string, scale: Scale): V2HorizontalPodAutoscaler {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: objectMetadata(owner, name, component),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
      minReplicas: Math.max(scale.min, 1),
      maxReplicas: scale.max,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: CPU_TARGET_PERCENT } } }],
    },
  };
}
