import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { KubernetesObject, V1Deployment, V1PolicyRule, V1RoleBinding } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { KubernetesApplier } from '../../../src/agent/kubernetes/applier.js';
import { LABEL } from '../../../src/agent/kubernetes/names.js';
import { validateAgainstSchema } from '../../support/kube-schemas.js';
import { KubeStandIn } from '../../support/kube-stand-in.js';
import { DEPLOYMENT_ID, desired, NAMESPACE, REVISION_ID } from './fixtures.js';
import { deadline } from '../../support/deadline.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);

/** Renders a kustomization with Debian's kubectl (offline), bounded in time. */
async function kustomize(directory: string): Promise<KubernetesObject[]> {
  const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, directory)], {
    signal: AbortSignal.timeout(deadline(60_000)),
    killSignal: 'SIGKILL',
    maxBuffer: 8 * 1024 * 1024,
  });
  // Plain YAML, not the client's typed loader: that one drops fields it does not know, which would hide mistakes.
  return yaml.loadAll(stdout) as KubernetesObject[];
}

async function kubectlMissing(): Promise<string | null> {
  try {
    await run('kubectl', ['version', '--client'], { signal: AbortSignal.timeout(deadline(30_000)), killSignal: 'SIGKILL' });
    return null;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'kubectl is not installed (apt-get install kubectl)' : null;
  }
}

function only<T extends KubernetesObject>(objects: KubernetesObject[], kind: string): T {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `expected one ${kind}, found ${found.length}`);
  return found[0] as T;
}

/** `group/resource:verb` for every permission a set of RBAC rules grants. */
function granted(rules: V1PolicyRule[]): string[] {
  return rules
    .flatMap((rule) =>
      (rule.apiGroups ?? []).flatMap((group) => (rule.resources ?? []).flatMap((resource) => rule.verbs.map((verb) => `${group}/${resource}:${verb}`))),
    )
    .sort();
}

/**
 * The permissions the applier needs, read from the requests it makes to the stand-in while
 * it creates, re-applies (pruning), checks (with failing pods), lists and deletes a
 * deployment. Server-side apply of an object that does not exist yet is a create, so every
 * patched resource needs create too.
 */
async function permissionsUsed(): Promise<string[]> {
  const standIn = await KubeStandIn.start({ namespaces: [NAMESPACE] });
  try {
    const applier = new KubernetesApplier(standIn.kubeConfig());
    const full = desired({ databasePassword: undefined, resourceSpec: { max_scale: 3, queue_min_scale: 1 } });
    await applier.apply(full);
    await applier.apply({ ...full, resourceSpec: {} });
    const pod = standIn.addPod('Deployment', NAMESPACE, 'support-agent-9d564ff8', { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] });
    standIn.addEvent(NAMESPACE, { involvedObject: { kind: 'Pod', name: pod }, reason: 'Unhealthy', message: 'Readiness probe failed: 500' });
    await applier.readiness({ namespace: NAMESPACE, deploymentId: DEPLOYMENT_ID, revisionId: REVISION_ID });
    await applier.list(NAMESPACE);
    standIn.addObject({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-0', namespace: NAMESPACE, labels: { [LABEL.managedBy]: 'berth', [LABEL.deploymentId]: DEPLOYMENT_ID } },
    });
    await applier.delete({ namespace: NAMESPACE, deploymentId: DEPLOYMENT_ID });
    const used = new Set<string>();
    for (const request of standIn.requests) {
      const match = request.path.match(/^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)\/namespaces\/[^/]+\/([^/]+)(\/[^/]+)?$/);
      if (!match) continue; // discovery, which every authenticated user may read
      const resource = `${match[1] ?? ''}/${match[2]}`;
      const verb = { GET: match[3] ? 'get' : 'list', PATCH: 'patch', DELETE: 'delete' }[request.method];
      assert.ok(verb, `unexpected ${request.method} ${request.path}`);
      used.add(`${resource}:${verb}`);
      if (verb === 'patch') used.add(`${resource}:create`);
    }
    return [...used].sort();
  } finally {
    await standIn.close();
  }
}

describe("the listener's install manifests", async () => {
  const skip = await kubectlMissing();

  test('render with kubectl kustomize into objects that match the Kubernetes schemas', { skip: skip ?? false }, async () => {
    const objects = await kustomize('deploy/listener-kubernetes');
    assert.deepEqual(
      objects.map((o) => o.kind),
      ['Namespace', 'ServiceAccount', 'Role', 'RoleBinding', 'Secret', 'Deployment'],
    );
    for (const object of objects) {
      validateAgainstSchema(object);
      if (object.kind !== 'Namespace') assert.equal(object.metadata?.namespace, 'berth', `${object.kind} ${object.metadata?.name}`);
    }
  });

  test('run `berth listener --compute-type k8s` as the service account, with BERTH_URL and the key from the Secret', { skip: skip ?? false }, async () => {
    const objects = await kustomize('deploy/listener-kubernetes');
    const pod = only<V1Deployment>(objects, 'Deployment').spec?.template.spec;
    const container = pod?.containers[0];
    assert.deepEqual([...(container?.command ?? []), ...(container?.args ?? [])], ['berth', 'listener', '--compute-type', 'k8s']);
    assert.equal(pod?.serviceAccountName, only(objects, 'ServiceAccount').metadata?.name);
    const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e]));
    assert.ok(env.BERTH_URL?.value);
    assert.deepEqual(env.BERTH_LISTENER_KEY?.valueFrom?.secretKeyRef, { name: only(objects, 'Secret').metadata?.name, key: 'BERTH_LISTENER_KEY' });
    // The root filesystem is read-only: the data directory must be a writable volume.
    assert.equal(container?.securityContext?.readOnlyRootFilesystem, true);
    const mount = container?.volumeMounts?.find((m) => m.mountPath === env.BERTH_LISTENER_DATA_DIR?.value);
    assert.ok(mount && !mount.readOnly, 'BERTH_LISTENER_DATA_DIR is a mounted, writable volume');
    assert.ok(pod?.volumes?.some((volume) => volume.name === mount.name && volume.emptyDir));
    const binding = only<V1RoleBinding>(objects, 'RoleBinding');
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'berth-listener', namespace: 'berth' }]);
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: only(objects, 'Role').metadata?.name });
  });

  test('grant exactly the kinds and verbs the applier uses, in one namespace or cluster-wide', { skip: skip ?? false }, async () => {
    const used = await permissionsUsed();
    const role = only<KubernetesObject & { rules: V1PolicyRule[] }>(await kustomize('deploy/listener-kubernetes'), 'Role');
    assert.deepEqual(granted(role.rules), used);

    const clusterWide = await kustomize('deploy/listener-kubernetes/overlays/cluster-wide');
    for (const object of clusterWide) validateAgainstSchema(object);
    assert.deepEqual(clusterWide.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'Namespace', 'Secret', 'ServiceAccount']);
    assert.deepEqual(granted(only<KubernetesObject & { rules: V1PolicyRule[] }>(clusterWide, 'ClusterRole').rules), used);
    assert.deepEqual(only<V1RoleBinding>(clusterWide, 'ClusterRoleBinding').subjects, [{ kind: 'ServiceAccount', name: 'berth-listener', namespace: 'berth' }]);
  });
});
