import type { V1Deployment, V1LocalObjectReference, V1Probe, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { type Owner, objectMetadata, selectorLabels, stableLabels } from './metadata.js';
import type { Compute, Sizing } from './sizing.js';
import { storageQuantity } from './sizing.js';

/** The image the public operator runs for each deployment's database. */
export const DEFAULT_POSTGRES_IMAGE = 'pgvector/pgvector:pg15';
export const DEFAULT_REDIS_IMAGE = 'redis:6';
export const POSTGRES_PORT = 5432;
export const REDIS_PORT = 6379;
/** Key of the database password in the `<base>-postgres` Secret; the applier reads it back to keep it stable. */
export const POSTGRES_PASSWORD_KEY = 'password';

const POSTGRES_USER = 'postgres';
const POSTGRES_DB = 'postgres';
const DATA_DIR = '/var/lib/postgresql/data';

export interface DatabaseInput {
  name: string;
  image: string;
  password: string;
  sizing: Sizing['database'];
  imagePullSecrets: V1LocalObjectReference[];
}

/** The connection URI the agent server gets as POSTGRES_URI (the same namespace's headless Service). */
export function postgresUri(owner: Owner, name: string, password: string): string {
  return `postgres://${POSTGRES_USER}:${encodeURIComponent(password)}@${name}.${owner.namespace}.svc:${POSTGRES_PORT}/${POSTGRES_DB}?sslmode=disable`;
}

export function redisUri(owner: Owner, name: string): string {
  return `redis://${name}.${owner.namespace}.svc:${REDIS_PORT}`;
}

/**
 * PostgreSQL as one StatefulSet with a claim from its template, a headless Service and a
 * Secret with its password. Its pod template carries only stable labels, so a new revision
 * of the agent server does not restart the database. The claim template is immutable in
 * Kubernetes: db_storage_gi applies when the database is first created.
 */
export function renderDatabase(owner: Owner, input: DatabaseInput): [V1Secret, V1Service, V1StatefulSet] {
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: objectMetadata(owner, input.name, 'postgres'),
    type: 'Opaque',
    data: { [POSTGRES_PASSWORD_KEY]: Buffer.from(input.password).toString('base64') },
  };
  const service: V1Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: objectMetadata(owner, input.name, 'postgres'),
    spec: {
      clusterIP: 'None',
      selector: selectorLabels(owner, 'postgres'),
      ports: [{ name: 'postgres', port: POSTGRES_PORT, targetPort: 'postgres', protocol: 'TCP' }],
    },
  };
  const ready: V1Probe = { exec: { command: ['pg_isready', '-U', POSTGRES_USER, '-d', POSTGRES_DB] }, periodSeconds: 5, timeoutSeconds: 5 };
  const statefulSet: V1StatefulSet = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: objectMetadata(owner, input.name, 'postgres'),
    spec: {
      serviceName: input.name,
      replicas: 1,
      selector: { matchLabels: selectorLabels(owner, 'postgres') },
      // The claim follows the StatefulSet (and so the deployment) when it is deleted, not when it scales.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
      template: {
        metadata: { labels: stableLabels(owner, 'postgres') },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(input.imagePullSecrets.length > 0 ? { imagePullSecrets: input.imagePullSecrets } : {}),
          containers: [
            {
              name: 'postgres',
              image: input.image,
              ...(input.sizing.maxConnections !== null ? { args: ['-c', `max_connections=${input.sizing.maxConnections}`] } : {}),
              env: [
                { name: 'POSTGRES_USER', value: POSTGRES_USER },
                { name: 'POSTGRES_DB', value: POSTGRES_DB },
                { name: 'POSTGRES_PASSWORD', valueFrom: { secretKeyRef: { name: input.name, key: POSTGRES_PASSWORD_KEY } } },
                // A subdirectory: a fresh volume's root may hold lost+found, which initdb refuses.
                { name: 'PGDATA', value: `${DATA_DIR}/pgdata` },
              ],
              ports: [{ name: 'postgres', containerPort: POSTGRES_PORT, protocol: 'TCP' }],
              resources: resources(input.sizing.compute),
              readinessProbe: ready,
              livenessProbe: { ...ready, periodSeconds: 10, failureThreshold: 6, initialDelaySeconds: 30 },
              volumeMounts: [{ name: 'data', mountPath: DATA_DIR }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'data', labels: stableLabels(owner, 'postgres') },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: storageQuantity(input.sizing.storageGi) } } },
        },
      ],
    },
  };
  return [secret, service, statefulSet];
}

export interface RedisInput {
  name: string;
  image: string;
  sizing: Sizing['redis'];
  imagePullSecrets: V1LocalObjectReference[];
}

/** Redis for streaming and run signals: ephemeral, one replica, bounded by --maxmemory. */
export function renderRedis(owner: Owner, input: RedisInput): [V1Service, V1Deployment] {
  const service: V1Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: objectMetadata(owner, input.name, 'redis'),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(owner, 'redis'),
      ports: [{ name: 'redis', port: REDIS_PORT, targetPort: 'redis', protocol: 'TCP' }],
    },
  };
  const ping: V1Probe = { exec: { command: ['redis-cli', 'ping'] }, periodSeconds: 5, timeoutSeconds: 5 };
  const deployment: V1Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: objectMetadata(owner, input.name, 'redis'),
    spec: {
      replicas: 1,
      // Two Redis pods side by side would split the pub/sub traffic: replace, do not surge.
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selectorLabels(owner, 'redis') },
      template: {
        metadata: { labels: stableLabels(owner, 'redis') },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(input.imagePullSecrets.length > 0 ? { imagePullSecrets: input.imagePullSecrets } : {}),
          containers: [
            {
              name: 'redis',
              image: input.image,
              args: ['--maxmemory', `${Math.round(input.sizing.memoryMb)}mb`],
              ports: [{ name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' }],
              resources: resources(input.sizing.compute),
              readinessProbe: ping,
              livenessProbe: { ...ping, periodSeconds: 10, failureThreshold: 6 },
            },
          ],
        },
      },
    },
  };
  return [service, deployment];
}

export function resources(compute: Compute): { requests?: Record<string, string>; limits?: Record<string, string> } {
  return {
    ...(Object.keys(compute.requests).length > 0 ? { requests: { ...compute.requests } } : {}),
    ...(Object.keys(compute.limits).length > 0 ? { limits: { ...compute.limits } } : {}),
  };
}
