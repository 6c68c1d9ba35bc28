import type { KubernetesObject, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ResourceSpec } from '../../domain/deployment-config.js';
import { DEFAULT_POSTGRES_IMAGE, DEFAULT_REDIS_IMAGE, postgresUri, redisUri, renderDatabase, renderRedis } from './backing-services.js';
import { type Owner, objectMetadata } from './metadata.js';
import { ANNOTATION, type KubernetesNames, kubernetesNames } from './names.js';
import { assertPullPolicy, podParts } from './pod-parts.js';
import { apiContainer, apiService, autoscaler, autoscales, queueContainer, requireCpuRequest, serverDeployment } from './server-workloads.js';
import { sizing } from './sizing.js';
import { assertDnsLabel, assertEnvName, assertLabelValue, ManifestError } from './syntax.js';

/** What the listener runs for one deployment: its latest revision as Berth hands it over. */
export interface DesiredDeployment {
  deploymentId: string;
  deploymentName: string;
  revisionId: string;
  namespace: string;
  image: string;
  /** Secrets and settings; POSTGRES_URI_CUSTOM / REDIS_URI_CUSTOM replace the provisioned database / Redis. */
  env: Record<string, string>;
  /** As stored by Berth: any subset of the API's ResourceSpec. */
  resourceSpec?: ResourceSpec | null;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /**
   * Password of the provisioned database; required unless POSTGRES_URI_CUSTOM is set. It must
   * stay the same for the life of the deployment (PostgreSQL keeps the first one it is given):
   * the applier reads it back from the cluster, or makes one for a new database.
   */
  databasePassword?: string;
  postgresImage?: string;
  redisImage?: string;
  /**
   * How the queue-worker pods start: by default as the public chart starts them, the
   * LangGraph Python server's queue entrypoint; null runs the image's own entrypoint
   * (its server then also runs jobs, as N_JOBS_PER_WORKER tells it).
   */
  queueWorkerCommand?: string[] | null;
  /** Jobs each queue worker runs at once (N_JOBS_PER_WORKER); the chart's default is 10. */
  jobsPerWorker?: number;
  /** The listener applying it, as a label: it removes only what it applied. */
  listenerId?: string;
}

/** Kubernetes refuses a Secret over 1 MiB; keep room for its metadata. */
const ENV_MAX_BYTES = 1_000_000;

export function provisionsDatabase(env: Record<string, string>): boolean {
  return !env.POSTGRES_URI_CUSTOM;
}

export function provisionsRedis(env: Record<string, string>): boolean {
  return !env.REDIS_URI_CUSTOM;
}

/**
 * Every object of one deployment, in the order to apply them. The first is the anchor, a
 * ConfigMap: the others must be owned by it (`withOwner`), which takes its uid, and a uid
 * exists only once the anchor is applied. So: apply the anchor, then the rest with its
 * owner reference. Deleting the anchor then deletes everything (Kubernetes' garbage
 * collector follows owner references); the database claim follows its StatefulSet.
 * Secrets and backing services come before the workloads that read them.
 *
 * Throws ManifestError, naming the input field to change, for anything Kubernetes would refuse.
 */
export function renderDeployment(desired: DesiredDeployment): KubernetesObject[] {
  checkIdentity(desired);
  const spec = desired.resourceSpec ?? {};
  const sizes = sizing(spec);
  const parts = podParts(spec);
  const names = kubernetesNames(desired.deploymentName, desired.deploymentId);
  const owner: Owner = {
    namespace: desired.namespace,
    deploymentId: desired.deploymentId,
    revisionId: desired.revisionId,
    instance: names.base,
    userLabels: parts.labels,
    userAnnotations: parts.annotations,
    listenerId: desired.listenerId,
  };
  const objects: KubernetesObject[] = [anchor(owner, names, desired)];
  const env = { ...desired.env };

  if (provisionsDatabase(desired.env)) {
    if (!desired.databasePassword) {
      throw new ManifestError('databasePassword', 'A database password is needed to provision the database (or set POSTGRES_URI_CUSTOM).');
    }
    objects.push(
      ...renderDatabase(owner, {
        name: names.postgres,
        image: desired.postgresImage ?? DEFAULT_POSTGRES_IMAGE,
        password: desired.databasePassword,
        sizing: sizes.database,
        imagePullSecrets: parts.imagePullSecrets,
      }),
    );
    env.POSTGRES_URI = postgresUri(owner, names.postgres, desired.databasePassword);
  } else {
    env.POSTGRES_URI = desired.env.POSTGRES_URI_CUSTOM as string;
  }
  if (provisionsRedis(desired.env)) {
    objects.push(
      ...renderRedis(owner, {
        name: names.redis,
        image: desired.redisImage ?? DEFAULT_REDIS_IMAGE,
        sizing: sizes.redis,
        imagePullSecrets: parts.imagePullSecrets,
      }),
    );
    env.REDIS_URI = redisUri(owner, names.redis);
  } else {
    env.REDIS_URI = desired.env.REDIS_URI_CUSTOM as string;
  }
  objects.push(envSecret(owner, names, env));

  const server = { owner, names, parts, desired };
  const queue = sizes.queue;
  objects.push(
    serverDeployment(server, 'api-server', names.apiServer, sizes.apiServer.scale, apiContainer(server, sizes.apiServer.compute, queue !== null)),
    apiService(owner, names),
  );
  if (queue) {
    objects.push(serverDeployment(server, 'queue', names.queue, queue.scale, queueContainer(server, queue.compute)));
  }
  if (autoscales(sizes.apiServer.scale)) {
    requireCpuRequest(sizes.apiServer.cpuRequested, 'resource_spec.cpu', 'max_scale');
    objects.push(autoscaler(owner, 'api-server', names.apiServer, sizes.apiServer.scale));
  }
  if (queue && autoscales(queue.scale)) {
    requireCpuRequest(queue.cpuRequested, 'resource_spec.queue_cpu', 'queue_max_scale');
    objects.push(autoscaler(owner, 'queue', names.queue, queue.scale));
  }
  return objects;
}

/** A copy of `object` owned by `owner` (the applied anchor, which has a uid). */
export function withOwner<T extends KubernetesObject>(object: T, owner: KubernetesObject): T {
  const uid = owner.metadata?.uid;
  const name = owner.metadata?.name;
  if (!uid || !name || !owner.kind || !owner.apiVersion)
    throw new Error('The owner has no uid yet: apply it first and use the object the API server returned.');
  return {
    ...object,
    metadata: { ...object.metadata, ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name, uid }] },
  };
}

function checkIdentity(desired: DesiredDeployment): void {
  assertLabelValue('deploymentId', desired.deploymentId);
  assertLabelValue('revisionId', desired.revisionId);
  if (desired.listenerId !== undefined) assertLabelValue('listenerId', desired.listenerId);
  if (desired.deploymentId === '' || desired.revisionId === '') throw new ManifestError('deploymentId', 'deploymentId and revisionId must not be empty.');
  assertDnsLabel('namespace', desired.namespace);
  if (typeof desired.deploymentName !== 'string' || desired.deploymentName === '') {
    throw new ManifestError('deploymentName', 'deploymentName must not be empty.');
  }
  if (typeof desired.image !== 'string' || desired.image === '' || /\s/.test(desired.image)) {
    throw new ManifestError('image', `image (${JSON.stringify(desired.image)}) must be a container image reference without spaces.`);
  }
  if (desired.imagePullPolicy !== undefined) assertPullPolicy('imagePullPolicy', desired.imagePullPolicy);
  for (const [name, value] of Object.entries(desired.env)) {
    assertEnvName(`env.${name}`, name);
    if (typeof value !== 'string') throw new ManifestError(`env.${name}`, `env.${name} must be a string.`);
  }
  for (const custom of ['POSTGRES_URI_CUSTOM', 'REDIS_URI_CUSTOM']) {
    if (custom in desired.env && desired.env[custom] === '')
      throw new ManifestError(`env.${custom}`, `env.${custom} is empty: give a connection URI or leave it out.`);
  }
  const command = desired.queueWorkerCommand;
  if (command !== undefined && command !== null && !(Array.isArray(command) && command.length > 0 && command.every((part) => typeof part === 'string'))) {
    throw new ManifestError('queueWorkerCommand', "queueWorkerCommand must be a non-empty list of strings, or null for the image's own entrypoint.");
  }
  if (desired.jobsPerWorker !== undefined && !(Number.isInteger(desired.jobsPerWorker) && desired.jobsPerWorker >= 1)) {
    throw new ManifestError('jobsPerWorker', 'jobsPerWorker must be a whole number of at least 1.');
  }
}

/** The anchor: owner of every other object, and a readable record of what is deployed. */
function anchor(owner: Owner, names: KubernetesNames, desired: DesiredDeployment): V1ConfigMap {
  const metadata = objectMetadata(owner, names.anchor, 'deployment');
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { ...metadata, annotations: { ...metadata.annotations, [ANNOTATION.deploymentName]: desired.deploymentName } },
    data: { deploymentId: desired.deploymentId, deploymentName: desired.deploymentName, revisionId: desired.revisionId },
  };
}

function envSecret(owner: Owner, names: KubernetesNames, env: Record<string, string>): V1Secret {
  const data = Object.fromEntries(Object.entries(env).map(([name, value]) => [name, Buffer.from(value).toString('base64')]));
  const bytes = Object.entries(env).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value), 0);
  if (bytes > ENV_MAX_BYTES) {
    throw new ManifestError('env', `The environment takes ${bytes} bytes; a Kubernetes Secret holds at most about 1 MB. Move large values into a volume.`);
  }
  // `data`, not `stringData`: server-side apply cannot track ownership of the write-only stringData.
  return { apiVersion: 'v1', kind: 'Secret', metadata: objectMetadata(owner, names.env, 'api-server'), type: 'Opaque', data };
}
