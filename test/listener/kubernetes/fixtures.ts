import assert from 'node:assert/strict';
import type { KubernetesObject, V1Container, V1Deployment, V1PodSpec, V1Secret, V1StatefulSet, V2HorizontalPodAutoscaler } from '@kubernetes/client-node';
import type { ResourceSpec } from '../../../src/domain/deployment-config.js';
import { type DesiredDeployment, renderDeployment, withOwner } from '../../../src/agent/kubernetes/manifests.js';
import { LABEL } from '../../../src/agent/kubernetes/names.js';
import { validateAgainstSchema } from '../../support/kube-schemas.js';

export const DEPLOYMENT_ID = '3f2b1c4d-1111-4111-8111-111111111111';
export const REVISION_ID = '4a5b6c7d-2222-4222-8222-222222222222';
export const NAMESPACE = 'agents';

export function desired(overrides: Partial<DesiredDeployment> = {}): DesiredDeployment {
  return {
    deploymentId: DEPLOYMENT_ID,
    deploymentName: 'support-agent',
    revisionId: REVISION_ID,
    namespace: NAMESPACE,
    image: 'registry.example.com/support-agent:1.4.2',
    env: { OPENAI_API_KEY: 'sk-test-123', LOG_LEVEL: 'debug' },
    databasePassword: 'pw-0123456789abcdef',
    ...overrides,
  };
}

/** A stand-in for the applied anchor: owner references need a uid. */
const APPLIED_ANCHOR: KubernetesObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'anchor', uid: '0a1b2c3d-0000-4000-8000-000000000000' } };

/** Renders and validates every object against the Kubernetes schemas, as rendered and as applied (owned by the anchor). */
export function renderValid(input: DesiredDeployment): KubernetesObject[] {
  const objects = renderDeployment(input);
  for (const object of objects) {
    validateAgainstSchema(object);
    validateAgainstSchema(withOwner(object, APPLIED_ANCHOR));
  }
  return objects;
}

export function renderSpec(spec: ResourceSpec, overrides: Partial<DesiredDeployment> = {}): KubernetesObject[] {
  return renderValid(desired({ ...overrides, resourceSpec: spec }));
}

export function component(objects: KubernetesObject[], kind: string, name: string): KubernetesObject | undefined {
  return objects.find((o) => o.kind === kind && o.metadata?.labels?.[LABEL.component] === name);
}

export function workload(objects: KubernetesObject[], name: 'api-server' | 'queue' | 'redis'): V1Deployment {
  const found = component(objects, 'Deployment', name);
  assert.ok(found, `no ${name} Deployment rendered`);
  return found as V1Deployment;
}

export function database(objects: KubernetesObject[]): V1StatefulSet {
  const found = component(objects, 'StatefulSet', 'postgres');
  assert.ok(found, 'no database StatefulSet rendered');
  return found as V1StatefulSet;
}

export function podSpec(deployment: V1Deployment | V1StatefulSet): V1PodSpec {
  const spec = deployment.spec?.template.spec;
  assert.ok(spec, 'no pod spec');
  return spec;
}

export function mainContainer(deployment: V1Deployment | V1StatefulSet): V1Container {
  const container = podSpec(deployment).containers[0];
  assert.ok(container, 'no container');
  return container;
}

export function autoscaler(objects: KubernetesObject[], name: 'api-server' | 'queue'): V2HorizontalPodAutoscaler | undefined {
  return component(objects, 'HorizontalPodAutoscaler', name) as V2HorizontalPodAutoscaler | undefined;
}

export function envSecret(objects: KubernetesObject[]): Record<string, string> {
  const secret = objects.find((o) => o.kind === 'Secret' && o.metadata?.name?.endsWith('-env')) as V1Secret | undefined;
  assert.ok(secret?.data, 'no env Secret rendered');
  return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

export function containerEnv(container: V1Container): Record<string, string | undefined> {
  return Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
}
