import type { KubernetesObject } from '@kubernetes/client-node';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Namespace, PersistentVolumeClaim, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';

/**
 * Validates objects against the Kubernetes OpenAPI schemas (kubernetes-models, generated
 * from Kubernetes' own OpenAPI document). A kind without a schema here fails, so a new
 * kind cannot slip through unvalidated.
 */
interface Validating {
  validate(): void;
}
type ModelClass = new (data: never) => Validating;

const MODELS: Record<string, ModelClass> = {
  'v1/ConfigMap': ConfigMap as ModelClass,
  'v1/Secret': Secret as ModelClass,
  'v1/Service': Service as ModelClass,
  'v1/Namespace': Namespace as ModelClass,
  'v1/ServiceAccount': ServiceAccount as ModelClass,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim as ModelClass,
  'apps/v1/Deployment': Deployment as ModelClass,
  'apps/v1/StatefulSet': StatefulSet as ModelClass,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler as ModelClass,
  'batch/v1/Job': Job as ModelClass,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as ModelClass,
  'rbac.authorization.k8s.io/v1/Role': Role as ModelClass,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding as ModelClass,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole as ModelClass,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding as ModelClass,
};

/** Throws, naming the object, when it does not match its kind's schema. */
export function validateAgainstSchema(object: KubernetesObject): void {
  const key = `${object.apiVersion}/${object.kind}`;
  const Model = MODELS[key];
  if (!Model) throw new Error(`No schema for ${key}: add its kubernetes-models class to test/support/kube-schemas.ts.`);
  try {
    new Model(structuredClone(object) as never).validate();
  } catch (error) {
    throw new Error(`${object.kind} ${object.metadata?.name ?? '(no name)'} does not match the Kubernetes schema: ${(error as Error).message}`);
  }
}
