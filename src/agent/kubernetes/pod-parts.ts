import type { V1Container, V1LocalObjectReference, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { ResourceSpec } from '../../domain/deployment-config.js';
import { LABEL } from './names.js';
import { assertDnsLabel, assertDnsSubdomain, assertEnvName, labelKeyProblem, labelValueProblem, ManifestError } from './syntax.js';

/**
 * The object-valued half of a resource spec (metadata and pod additions), checked against
 * the members the API documents. Unknown members are refused rather than dropped: the
 * Kubernetes client drops fields it does not know, so a typo would otherwise vanish
 * silently. Deeper contents (a volume source, a securityContext) are passed through and
 * left to the API server's validation.
 */
export interface PodParts {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  serviceAccountName: string | null;
  imagePullSecrets: V1LocalObjectReference[];
  volumes: V1Volume[];
  volumeMounts: V1VolumeMount[];
  initContainers: V1Container[];
  sidecars: V1Container[];
}

const VOLUME_SOURCES = ['configMap', 'secret', 'emptyDir', 'persistentVolumeClaim', 'nfs', 'projected', 'downwardAPI', 'csi'];
const VOLUME_MOUNT_FIELDS = ['name', 'mountPath', 'subPath', 'mountPropagation', 'subPathExpr', 'readOnly'];
const CONTAINER_FIELDS = [
  'name',
  'image',
  'imagePullPolicy',
  'workingDir',
  'restartPolicy',
  'command',
  'args',
  'env',
  'envFrom',
  'resources',
  'volumeMounts',
  'securityContext',
];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
/** Annotations of one object may take 256 KiB in all (Kubernetes' limit). */
const ANNOTATIONS_MAX_BYTES = 256 * 1024;

/** Names Berth gives its own containers; user containers may not reuse them. */
export const OWN_CONTAINER_NAMES = ['api-server', 'queue'];

export function podParts(spec: ResourceSpec): PodParts {
  const volumes = list(spec, 'volumes').map((item, index) => volume(item, `resource_spec.volumes[${index}]`));
  unique(
    volumes.map((v) => v.name),
    'resource_spec.volumes',
    'volume',
  );
  const volumeNames = new Set(volumes.map((v) => v.name));
  const volumeMounts = list(spec, 'volume_mounts').map((item, index) => volumeMount(item, `resource_spec.volume_mounts[${index}]`, volumeNames));
  const initContainers = list(spec, 'init_containers').map((item, index) => container(item, `resource_spec.init_containers[${index}]`, volumeNames, true));
  const sidecars = list(spec, 'sidecars').map((item, index) => container(item, `resource_spec.sidecars[${index}]`, volumeNames, false));
  unique([...OWN_CONTAINER_NAMES, ...initContainers.map((c) => c.name), ...sidecars.map((c) => c.name)], 'resource_spec', 'container');
  return {
    labels: labels(spec.labels),
    annotations: annotations(spec.annotations),
    serviceAccountName: serviceAccountName(spec.service_account_name),
    imagePullSecrets: list(spec, 'image_pull_secrets').map((item, index) => pullSecret(item, `resource_spec.image_pull_secrets[${index}]`)),
    volumes,
    volumeMounts,
    initContainers,
    sidecars,
  };
}

export function assertPullPolicy(field: string, value: unknown): void {
  if (typeof value !== 'string' || !PULL_POLICIES.includes(value)) {
    throw new ManifestError(field, `${field} must be one of ${PULL_POLICIES.join(', ')}, not ${JSON.stringify(value)}.`);
  }
}

function labels(value: unknown): Record<string, string> {
  const entries = stringRecord(value, 'resource_spec.labels');
  for (const [key, text] of entries) {
    const field = `resource_spec.labels[${JSON.stringify(key)}]`;
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) throw new ManifestError(field, `Label key ${JSON.stringify(key)} is not valid in Kubernetes: ${keyProblem}.`);
    if (Object.values(LABEL).includes(key as never) || key.startsWith('berth.dev/')) {
      throw new ManifestError(field, `Label key ${JSON.stringify(key)} is set by Berth (it selects the deployment's pods); choose another key.`);
    }
    const valueProblem = labelValueProblem(text);
    if (valueProblem) throw new ManifestError(field, `Label ${JSON.stringify(key)} has a value Kubernetes refuses (${JSON.stringify(text)}): ${valueProblem}.`);
  }
  return Object.fromEntries(entries);
}

function annotations(value: unknown): Record<string, string> {
  const entries = stringRecord(value, 'resource_spec.annotations');
  let bytes = 0;
  for (const [key, text] of entries) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) {
      throw new ManifestError(
        `resource_spec.annotations[${JSON.stringify(key)}]`,
        `Annotation key ${JSON.stringify(key)} is not valid in Kubernetes: ${keyProblem}.`,
      );
    }
    if (key.startsWith('berth.dev/')) {
      throw new ManifestError(
        `resource_spec.annotations[${JSON.stringify(key)}]`,
        `Annotation key ${JSON.stringify(key)} is reserved for Berth; choose another key.`,
      );
    }
    bytes += Buffer.byteLength(key) + Buffer.byteLength(text);
  }
  if (bytes > ANNOTATIONS_MAX_BYTES) {
    throw new ManifestError(
      'resource_spec.annotations',
      `resource_spec.annotations take ${bytes} bytes; Kubernetes allows at most ${ANNOTATIONS_MAX_BYTES} per object.`,
    );
  }
  return Object.fromEntries(entries);
}

function serviceAccountName(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new ManifestError('resource_spec.service_account_name', 'resource_spec.service_account_name must be a string.');
  assertDnsSubdomain('resource_spec.service_account_name', value);
  return value;
}

function pullSecret(item: Record<string, unknown>, field: string): V1LocalObjectReference {
  onlyFields(item, field, ['name']);
  const name = requiredString(item, 'name', field);
  assertDnsSubdomain(`${field}.name`, name);
  return { name };
}

function volume(item: Record<string, unknown>, field: string): V1Volume {
  onlyFields(item, field, ['name', ...VOLUME_SOURCES]);
  const name = requiredString(item, 'name', field);
  assertDnsLabel(`${field}.name`, name);
  const sources = VOLUME_SOURCES.filter((source) => item[source] !== undefined && item[source] !== null);
  if (sources.length !== 1) {
    throw new ManifestError(field, `${field} must have exactly one source (one of ${VOLUME_SOURCES.join(', ')}); it has ${sources.length}.`);
  }
  const source = sources[0] as string;
  if (!isRecord(item[source])) throw new ManifestError(`${field}.${source}`, `${field}.${source} must be an object.`);
  return { name, [source]: item[source] } as V1Volume;
}

function volumeMount(item: Record<string, unknown>, field: string, volumeNames: Set<string>): V1VolumeMount {
  onlyFields(item, field, VOLUME_MOUNT_FIELDS);
  const name = requiredString(item, 'name', field);
  if (!volumeNames.has(name)) {
    throw new ManifestError(`${field}.name`, `${field} mounts volume ${JSON.stringify(name)}, which resource_spec.volumes does not define.`);
  }
  const mountPath = requiredString(item, 'mountPath', field);
  for (const key of ['subPath', 'mountPropagation', 'subPathExpr']) optionalString(item, key, field);
  if (item.readOnly !== undefined && typeof item.readOnly !== 'boolean')
    throw new ManifestError(`${field}.readOnly`, `${field}.readOnly must be true or false.`);
  return { ...(item as object), name, mountPath } as V1VolumeMount;
}

function container(item: Record<string, unknown>, field: string, volumeNames: Set<string>, isInit: boolean): V1Container {
  onlyFields(item, field, CONTAINER_FIELDS);
  const name = requiredString(item, 'name', field);
  assertDnsLabel(`${field}.name`, name);
  requiredString(item, 'image', field);
  if (item.imagePullPolicy !== undefined) assertPullPolicy(`${field}.imagePullPolicy`, item.imagePullPolicy);
  optionalString(item, 'workingDir', field);
  if (item.restartPolicy !== undefined) {
    // Only init containers take a restart policy: "Always" makes one a native sidecar (Kubernetes 1.29+).
    if (!isInit || item.restartPolicy !== 'Always') {
      throw new ManifestError(
        `${field}.restartPolicy`,
        `${field}.restartPolicy can only be "Always", and only on init_containers (where it makes a sidecar that runs beside the server).`,
      );
    }
  }
  for (const key of ['command', 'args']) {
    const value = item[key];
    if (value !== undefined && !(Array.isArray(value) && value.every((part) => typeof part === 'string'))) {
      throw new ManifestError(`${field}.${key}`, `${field}.${key} must be a list of strings.`);
    }
  }
  if (item.env !== undefined) {
    if (!Array.isArray(item.env)) throw new ManifestError(`${field}.env`, `${field}.env must be a list.`);
    item.env.forEach((entry: unknown, index: number) => envEntry(entry, `${field}.env[${index}]`));
  }
  if (item.envFrom !== undefined && !(Array.isArray(item.envFrom) && item.envFrom.every(isRecord))) {
    throw new ManifestError(`${field}.envFrom`, `${field}.envFrom must be a list of objects.`);
  }
  for (const key of ['resources', 'securityContext']) {
    if (item[key] !== undefined && !isRecord(item[key])) throw new ManifestError(`${field}.${key}`, `${field}.${key} must be an object.`);
  }
  if (item.volumeMounts !== undefined) {
    if (!Array.isArray(item.volumeMounts)) throw new ManifestError(`${field}.volumeMounts`, `${field}.volumeMounts must be a list.`);
    item.volumeMounts.forEach((mount: unknown, index: number) => {
      const mountField = `${field}.volumeMounts[${index}]`;
      if (!isRecord(mount)) throw new ManifestError(mountField, `${mountField} must be an object.`);
      volumeMount(mount, mountField, volumeNames);
    });
  }
  return item as unknown as V1Container;
}

function envEntry(entry: unknown, field: string): void {
  if (!isRecord(entry)) throw new ManifestError(field, `${field} must be an object with name and value (or valueFrom).`);
  onlyFields(entry, field, ['name', 'value', 'valueFrom']);
  assertEnvName(`${field}.name`, requiredString(entry, 'name', field));
  if (entry.value !== undefined && typeof entry.value !== 'string') throw new ManifestError(`${field}.value`, `${field}.value must be a string.`);
  if (entry.valueFrom !== undefined && !isRecord(entry.valueFrom)) throw new ManifestError(`${field}.valueFrom`, `${field}.valueFrom must be an object.`);
}

function list(spec: ResourceSpec, key: string): Record<string, unknown>[] {
  const value = spec[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new ManifestError(`resource_spec.${key}`, `resource_spec.${key} must be a list.`);
  return value.map((item, index) => {
    if (!isRecord(item)) throw new ManifestError(`resource_spec.${key}[${index}]`, `resource_spec.${key}[${index}] must be an object.`);
    return item;
  });
}

function stringRecord(value: unknown, field: string): [string, string][] {
  if (value === undefined || value === null) return [];
  if (!isRecord(value)) throw new ManifestError(field, `${field} must be an object of strings.`);
  return Object.entries(value).map(([key, text]) => {
    if (typeof text !== 'string') throw new ManifestError(`${field}[${JSON.stringify(key)}]`, `${field}[${JSON.stringify(key)}] must be a string.`);
    return [key, text];
  });
}

function onlyFields(item: Record<string, unknown>, field: string, allowed: string[]): void {
  const unknown = Object.keys(item).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) {
    throw new ManifestError(
      `${field}.${unknown[0]}`,
      `${field} has ${unknown.map((key) => JSON.stringify(key)).join(', ')}, which Berth does not pass on; allowed: ${allowed.join(', ')}.`,
    );
  }
}

function requiredString(item: Record<string, unknown>, key: string, field: string): string {
  const value = item[key];
  if (typeof value !== 'string' || value === '') throw new ManifestError(`${field}.${key}`, `${field}.${key} is required and must be a non-empty string.`);
  return value;
}

function optionalString(item: Record<string, unknown>, key: string, field: string): void {
  if (item[key] !== undefined && typeof item[key] !== 'string') throw new ManifestError(`${field}.${key}`, `${field}.${key} must be a string.`);
}

function unique(names: string[], field: string, what: string): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) {
      const own = OWN_CONTAINER_NAMES.includes(name) ? ' (Berth names its own containers so)' : '';
      throw new ManifestError(field, `Two ${what}s are named ${JSON.stringify(name)}${own}; ${what} names must be unique in a pod.`);
    }
    seen.add(name);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
