import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { KubernetesApplier } from '../../../src/agent/kubernetes/applier.js';
import { KubernetesRequestError } from '../../../src/agent/kubernetes/kube-errors.js';
import { type DesiredDeployment, renderDeployment } from '../../../src/agent/kubernetes/manifests.js';
import { kubernetesNames, LABEL } from '../../../src/agent/kubernetes/names.js';
import { ManifestError } from '../../../src/agent/kubernetes/syntax.js';
import { type KubeObject, KubeStandIn } from '../../support/kube-stand-in.js';
import { DEPLOYMENT_ID, desired, NAMESPACE, REVISION_ID } from './fixtures.js';

const NAMES = kubernetesNames('support-agent', DEPLOYMENT_ID);
const NEXT_REVISION = '5b6c7d8e-3333-4333-8333-333333333333';
const OTHER_DEPLOYMENT = '6c7d8e9f-4444-4444-8444-444444444444';

/** Everything the renderer can produce: queue workers, both autoscalers, pod additions. */
const FULL: DesiredDeployment = desired({
  databasePassword: undefined,
  resourceSpec: {
    max_scale: 3,
    queue_min_scale: 1,
    queue_max_scale: 2,
    labels: { team: 'agents' },
    volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Gi' } }],
    volume_mounts: [{ name: 'scratch', mountPath: '/scratch' }],
    sidecars: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.30', securityContext: { runAsNonRoot: true } }],
  },
});

async function cluster(t: TestContext, namespaces = [NAMESPACE]): Promise<{ standIn: KubeStandIn; applier: KubernetesApplier }> {
  const standIn = await KubeStandIn.start({ namespaces });
  t.after(() => standIn.close());
  return { standIn, applier: new KubernetesApplier(standIn.kubeConfig()) };
}

function storedPassword(standIn: KubeStandIn): string {
  const secret = standIn.object('Secret', NAMESPACE, NAMES.postgres) as KubeObject & { data: Record<string, string> };
  return Buffer.from(secret.data.password as string, 'base64').toString('utf8');
}

function envOf(standIn: KubeStandIn): Record<string, string> {
  const secret = standIn.object('Secret', NAMESPACE, NAMES.env) as KubeObject & { data: Record<string, string> };
  return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** Every member of `expected` is in `actual` with the same value (the server may add members, never drop or change them). */
function assertContains(actual: unknown, expected: unknown, path: string): void {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual) && actual.length === expected.length, `${path}: expected ${expected.length} items, got ${JSON.stringify(actual)}`);
    expected.forEach((item, index) => assertContains(actual[index], item, `${path}[${index}]`));
  } else if (typeof expected === 'object' && expected !== null) {
    assert.ok(typeof actual === 'object' && actual !== null, `${path}: missing`);
    for (const [key, value] of Object.entries(expected)) assertContains((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
  } else {
    assert.equal(actual, expected, path);
  }
}

function rollOutAll(standIn: KubeStandIn): void {
  for (const object of standIn.objects({ namespace: NAMESPACE })) {
    if (object.kind === 'Deployment' || object.kind === 'StatefulSet') standIn.markRolledOut(object.kind, NAMESPACE, object.metadata.name);
  }
}

const target = { namespace: NAMESPACE, deploymentId: DEPLOYMENT_ID, revisionId: REVISION_ID };

describe('apply', () => {
  test('creates every rendered object as rendered, owned by the anchor, by server-side apply as berth-listener with force', async (t) => {
    const { standIn, applier } = await cluster(t);
    const result = await applier.apply(FULL);

    const rendered = renderDeployment({ ...FULL, databasePassword: storedPassword(standIn) });
    assert.deepEqual(
      result.applied.map((r) => `${r.kind} ${r.name}`),
      rendered.map((o) => `${o.kind} ${o.metadata?.name}`),
    );
    const anchor = standIn.object('ConfigMap', NAMESPACE, NAMES.anchor);
    assert.ok(anchor);
    for (const object of rendered) {
      const stored = standIn.object(object.kind as string, NAMESPACE, object.metadata?.name as string);
      assert.ok(stored, `${object.kind} ${object.metadata?.name} was not created`);
      // Nothing rendered was lost on the way (the client drops fields it does not know).
      const { metadata, ...content } = object as KubernetesObject & Record<string, unknown>;
      assertContains(stored, content, `${object.kind} ${object.metadata?.name}`);
      assert.deepEqual(stored.metadata.labels, metadata?.labels);
      const expectedOwners: KubeObject['metadata']['ownerReferences'] =
        object === rendered[0] ? undefined : [{ apiVersion: 'v1', kind: 'ConfigMap', name: NAMES.anchor, uid: anchor.metadata.uid }];
      assert.deepEqual(stored.metadata.ownerReferences, expectedOwners, `owner of ${object.kind} ${object.metadata?.name}`);
    }
    const patches = standIn.requests.filter((r) => r.method === 'PATCH');
    assert.equal(patches.length, rendered.length);
    for (const patch of patches) {
      assert.equal(patch.contentType, 'application/apply-patch+yaml');
      assert.equal(patch.query.get('fieldManager'), 'berth-listener');
      assert.equal(patch.query.get('force'), 'true');
    }
  });

  test('re-applying the same desired state changes nothing', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    const before = standIn.objects({ namespace: NAMESPACE });
    const again = await applier.apply(FULL);
    assert.deepEqual(again.pruned, []);
    assert.deepEqual(
      standIn.objects({ namespace: NAMESPACE }).map((o) => [o.kind, o.metadata.name, o.metadata.uid, o.metadata.resourceVersion, o.metadata.generation]),
      before.map((o) => [o.kind, o.metadata.name, o.metadata.uid, o.metadata.resourceVersion, o.metadata.generation]),
    );
  });

  test('keeps the database password it made, and a new revision rolls the server but not the database or Redis', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    const password = storedPassword(standIn);
    assert.match(password, /^[0-9a-f]{48}$/);
    await applier.apply({ ...FULL, revisionId: NEXT_REVISION, env: { ...FULL.env, LOG_LEVEL: 'info' } });
    assert.equal(storedPassword(standIn), password);
    assert.equal(envOf(standIn).POSTGRES_URI, `postgres://postgres:${password}@${NAMES.postgres}.${NAMESPACE}.svc:5432/postgres?sslmode=disable`);
    assert.equal(envOf(standIn).LOG_LEVEL, 'info');
    assert.equal(standIn.object('Deployment', NAMESPACE, NAMES.apiServer)?.metadata.generation, 2);
    assert.equal(standIn.object('Deployment', NAMESPACE, NAMES.queue)?.metadata.generation, 2);
    assert.equal(standIn.object('StatefulSet', NAMESPACE, NAMES.postgres)?.metadata.generation, 1);
    assert.equal(standIn.object('Deployment', NAMESPACE, NAMES.redis)?.metadata.generation, 1);
    assert.equal(standIn.object('ConfigMap', NAMESPACE, NAMES.anchor)?.metadata.labels?.[LABEL.revisionId], NEXT_REVISION);
  });

  test('takes over fields another field manager applied', async (t) => {
    const { standIn, applier } = await cluster(t);
    await new KubernetesApplier(standIn.kubeConfig(), { fieldManager: 'someone-else' }).apply(FULL);
    await applier.apply({ ...FULL, image: 'registry.example.com/support-agent:1.5.0' });
    const api = standIn.object('Deployment', NAMESPACE, NAMES.apiServer) as KubeObject & { spec: { template: { spec: { containers: { image: string }[] } } } };
    assert.equal(api.spec.template.spec.containers[0]?.image, 'registry.example.com/support-agent:1.5.0');
  });

  test('removes what the new desired state no longer has, but never the database', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    const result = await applier.apply({
      ...FULL,
      revisionId: NEXT_REVISION,
      resourceSpec: { min_scale: 1 },
      env: { ...FULL.env, POSTGRES_URI_CUSTOM: 'postgres://app:pw@db.internal:5432/agents' },
    });
    assert.deepEqual(result.pruned.map((r) => `${r.kind} ${r.name}`).sort(), [
      `Deployment ${NAMES.queue}`,
      `HorizontalPodAutoscaler ${NAMES.apiServer}`,
      `HorizontalPodAutoscaler ${NAMES.queue}`,
    ]);
    assert.equal(standIn.object('Deployment', NAMESPACE, NAMES.queue), undefined);
    assert.ok(standIn.object('StatefulSet', NAMESPACE, NAMES.postgres), 'the old database stays until the deployment is deleted');
    assert.equal(envOf(standIn).POSTGRES_URI, 'postgres://app:pw@db.internal:5432/agents');
  });
});

describe('readiness', () => {
  test('waits for the rollout, is ready once every workload is, and waits again for a new revision', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    const waiting = await applier.readiness(target);
    assert.equal(waiting.ready, false);
    assert.equal(waiting.failure, undefined);
    assert.match(waiting.waitingFor ?? '', /API server/);

    rollOutAll(standIn);
    assert.deepEqual(await applier.readiness(target), { ready: true });

    await applier.apply({ ...FULL, revisionId: NEXT_REVISION });
    const next = await applier.readiness({ ...target, revisionId: NEXT_REVISION });
    assert.equal(next.ready, false);
    assert.match(next.waitingFor ?? '', /Kubernetes has not yet acted on the latest change to the API server/);
    rollOutAll(standIn);
    assert.deepEqual(await applier.readiness({ ...target, revisionId: NEXT_REVISION }), { ready: true });
  });

  test('asking about a revision that was never applied is a wait, not a failure', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    rollOutAll(standIn);
    const readiness = await applier.readiness({ ...target, revisionId: NEXT_REVISION });
    assert.deepEqual(readiness, {
      ready: false,
      waitingFor: `the API server still runs revision ${REVISION_ID}; the queue worker still runs revision ${REVISION_ID}`,
    });
  });

  test('a deployment with nothing in the cluster is a failure', async (t) => {
    const { applier } = await cluster(t);
    const readiness = await applier.readiness(target);
    assert.equal(readiness.failure?.reason, 'NotFound');
    assert.match(readiness.failure?.message ?? '', /Apply the deployment again/);
  });

  interface FailureCase {
    name: string;
    simulate: (standIn: KubeStandIn) => void;
    reason: string;
    message: RegExp;
  }

  const waitingPod = (reason: string, message: string, extra: Record<string, unknown> = {}) => ({
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True' }],
    containerStatuses: [{ name: 'api-server', ready: false, restartCount: 0, image: '', imageID: '', state: { waiting: { reason, message } }, ...extra }],
  });

  const failures: FailureCase[] = [
    {
      name: 'an image that cannot be pulled (ImagePullBackOff)',
      simulate: (s) =>
        s.addPod('Deployment', NAMESPACE, NAMES.apiServer, waitingPod('ImagePullBackOff', 'Back-off pulling image "registry.example.com/support-agent:1.4.2"')),
      reason: 'ImagePullBackOff',
      message: /cannot pull image registry\.example\.com\/support-agent:1\.4\.2 for the API server .*image_pull_secrets/,
    },
    {
      name: 'an image that does not exist (ErrImagePull)',
      simulate: (s) => s.addPod('Deployment', NAMESPACE, NAMES.apiServer, waitingPod('ErrImagePull', 'rpc error: code = NotFound desc = manifest unknown')),
      reason: 'ErrImagePull',
      message: /manifest unknown\. Check that the image exists/,
    },
    {
      name: 'a server that keeps crashing, out of memory (CrashLoopBackOff)',
      simulate: (s) =>
        s.addPod(
          'Deployment',
          NAMESPACE,
          NAMES.apiServer,
          waitingPod('CrashLoopBackOff', 'back-off 5m0s restarting failed container', {
            restartCount: 7,
            lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } },
          }),
        ),
      reason: 'CrashLoopBackOff',
      message:
        /restarted 7 times \(last exit code 137, OOMKilled\)\. It ran out of memory: raise resource_spec\.memory_limit_mb\. .*kubectl logs -n agents support-agent-9d564ff8-\w+ -c api-server --previous/,
    },
    {
      name: 'a pod no node can take (Unschedulable)',
      simulate: (s) =>
        s.addPod('Deployment', NAMESPACE, NAMES.queue, {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient cpu.' }],
        }),
      reason: 'Unschedulable',
      message:
        /queue worker pod .* cannot be scheduled in namespace agents: 0\/3 nodes are available: 3 Insufficient cpu\.\. Lower resource_spec\.queue_cpu and queue_memory_mb/,
    },
    {
      name: 'a database whose claim cannot be bound (Unschedulable)',
      simulate: (s) =>
        s.addPod('StatefulSet', NAMESPACE, NAMES.postgres, {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'pod has unbound immediate PersistentVolumeClaims' }],
        }),
      reason: 'Unschedulable',
      message: /database pod .* StorageClass/,
    },
    {
      name: 'a readiness probe that keeps failing',
      simulate: (s) => {
        const pod = s.addPod('Deployment', NAMESPACE, NAMES.apiServer, {
          phase: 'Running',
          conditions: [
            { type: 'PodScheduled', status: 'True' },
            { type: 'Ready', status: 'False' },
          ],
          containerStatuses: [{ name: 'api-server', ready: false, started: true, restartCount: 0, image: '', imageID: '', state: { running: {} } }],
        });
        s.addEvent(NAMESPACE, {
          involvedObject: { kind: 'Pod', name: pod },
          reason: 'Unhealthy',
          message: 'Readiness probe failed: HTTP probe failed with statuscode: 500',
          count: 5,
        });
      },
      reason: 'ReadinessProbeFailed',
      message: /fails its readiness probe \(GET \/ok on port 8000\), 5 times so far: Readiness probe failed: HTTP probe failed with statuscode: 500/,
    },
    {
      name: 'a missing Secret key (CreateContainerConfigError)',
      simulate: (s) => s.addPod('Deployment', NAMESPACE, NAMES.apiServer, waitingPod('CreateContainerConfigError', 'secret "vault-token" not found')),
      reason: 'CreateContainerConfigError',
      message: /secret "vault-token" not found\. A Secret, ConfigMap or key it refers to/,
    },
    {
      name: 'a rollout past its deadline',
      simulate: (s) =>
        s.setStatus('Deployment', NAMESPACE, NAMES.apiServer, {
          observedGeneration: 1,
          conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x" has timed out progressing.' }],
        }),
      reason: 'ProgressDeadlineExceeded',
      message: /API server did not finish rolling out in time: ReplicaSet "x" has timed out progressing\./,
    },
    {
      name: 'pods the namespace refuses (ReplicaFailure, a quota)',
      simulate: (s) =>
        s.setStatus('Deployment', NAMESPACE, NAMES.apiServer, {
          observedGeneration: 1,
          conditions: [
            { type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "x" is forbidden: exceeded quota: compute, requested: cpu=1' },
          ],
        }),
      reason: 'ReplicaFailure',
      message: /exceeded quota.*ResourceQuota/,
    },
  ];

  for (const { name, simulate, reason, message } of failures) {
    test(`reports ${name}`, async (t) => {
      const { standIn, applier } = await cluster(t);
      await applier.apply(FULL);
      simulate(standIn);
      const readiness = await applier.readiness(target);
      assert.equal(readiness.ready, false);
      assert.equal(readiness.failure?.reason, reason, JSON.stringify(readiness));
      assert.match(readiness.failure?.message ?? '', message);
    });
  }

  test('a slow start (startup probe failures) and a few readiness failures are waits, not failures', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    const pod = standIn.addPod('Deployment', NAMESPACE, NAMES.apiServer, {
      phase: 'Running',
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
      containerStatuses: [{ name: 'api-server', ready: false, started: false, restartCount: 0, image: '', imageID: '', state: { running: {} } }],
    });
    standIn.addEvent(NAMESPACE, {
      involvedObject: { kind: 'Pod', name: pod },
      reason: 'Unhealthy',
      message: 'Startup probe failed: connection refused',
      count: 12,
    });
    standIn.addEvent(NAMESPACE, {
      involvedObject: { kind: 'Pod', name: pod },
      reason: 'Unhealthy',
      message: 'Readiness probe failed: connection refused',
      count: 2,
    });
    const readiness = await applier.readiness(target);
    assert.equal(readiness.failure, undefined);
    assert.match(readiness.waitingFor ?? '', /API server pod .* is starting \(Startup probe failed: connection refused\)/);
  });

  test('a crashing pod of the previous revision does not fail the new one', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    await applier.apply({ ...FULL, revisionId: NEXT_REVISION });
    rollOutAll(standIn);
    standIn.addPod('Deployment', NAMESPACE, NAMES.apiServer, waitingPod('CrashLoopBackOff', 'back-off restarting failed container'), {
      [LABEL.revisionId]: REVISION_ID,
    });
    assert.deepEqual(await applier.readiness({ ...target, revisionId: NEXT_REVISION }), { ready: true });
  });
});

describe('list and delete', () => {
  test('list returns what Berth manages in the namespace, by deployment', async (t) => {
    const { applier } = await cluster(t);
    await applier.apply(FULL);
    await applier.apply(desired({ deploymentId: OTHER_DEPLOYMENT, deploymentName: 'billing-agent', databasePassword: undefined }));
    const all = await applier.list(NAMESPACE);
    assert.deepEqual([...new Set(all.map((o) => o.deploymentId))].sort(), [DEPLOYMENT_ID, OTHER_DEPLOYMENT].sort());
    const mine = await applier.list(NAMESPACE, DEPLOYMENT_ID);
    assert.equal(mine.length, renderDeployment({ ...FULL, databasePassword: 'x' }).length);
    const api = mine.find((o) => o.kind === 'Deployment' && o.component === 'api-server');
    assert.deepEqual(api && { name: api.name, revisionId: api.revisionId, uid: typeof api.uid }, {
      name: NAMES.apiServer,
      revisionId: REVISION_ID,
      uid: 'string',
    });
  });

  test('delete removes every object of the deployment, with its pods, its database claim and anything left without an owner, and nothing else', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    await applier.apply(desired({ deploymentId: OTHER_DEPLOYMENT, deploymentName: 'billing-agent', databasePassword: undefined }));
    rollOutAll(standIn);
    const statefulSet = standIn.object('StatefulSet', NAMESPACE, NAMES.postgres) as KubeObject & {
      spec: { volumeClaimTemplates: { metadata: { labels: Record<string, string> } }[] };
    };
    standIn.addObject({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: `data-${NAMES.postgres}-0`,
        namespace: NAMESPACE,
        labels: statefulSet.spec.volumeClaimTemplates[0]?.metadata.labels,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: NAMES.postgres, uid: statefulSet.metadata.uid }],
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '8Gi' } } },
    });
    standIn.addObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'left-behind', namespace: NAMESPACE, labels: { [LABEL.managedBy]: 'berth', [LABEL.deploymentId]: DEPLOYMENT_ID } },
    });
    const mine = (o: KubeObject) => o.metadata.labels?.[LABEL.deploymentId] === DEPLOYMENT_ID;
    assert.ok(standIn.objects({ kind: 'Pod' }).some(mine));

    const deleted = await applier.delete({ namespace: NAMESPACE, deploymentId: DEPLOYMENT_ID });
    const rendered = renderDeployment({ ...FULL, databasePassword: 'x' }).map((o) => `${o.kind} ${o.metadata?.name}`);
    assert.equal(`${deleted[0]?.kind} ${deleted[0]?.name}`, `ConfigMap ${NAMES.anchor}`, 'the anchor goes first');
    assert.deepEqual(
      deleted.map((r) => `${r.kind} ${r.name}`).sort(),
      [...rendered, `PersistentVolumeClaim data-${NAMES.postgres}-0`, 'Secret left-behind'].sort(),
    );
    standIn.collectGarbage();
    assert.deepEqual(
      standIn
        .objects()
        .filter(mine)
        .map((o) => `${o.kind} ${o.metadata.name}`),
      [],
      'the pods went with their workloads',
    );
    assert.ok(standIn.objects().filter((o) => o.metadata.labels?.[LABEL.deploymentId] === OTHER_DEPLOYMENT).length > 0, 'the other deployment is untouched');
    assert.deepEqual(await applier.delete({ namespace: NAMESPACE, deploymentId: DEPLOYMENT_ID }), [], 'deleting again finds nothing');
  });
});

test('deleting the anchor alone (as kubectl delete would) lets the garbage collector remove everything else', async (t) => {
  const { standIn, applier } = await cluster(t);
  await applier.apply(FULL);
  rollOutAll(standIn);
  await KubernetesObjectApi.makeApiClient(standIn.kubeConfig()).delete({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: NAMES.anchor, namespace: NAMESPACE },
  });
  standIn.collectGarbage();
  assert.deepEqual(
    standIn.objects({ namespace: NAMESPACE }).map((o) => `${o.kind} ${o.metadata.name}`),
    [],
  );
});

describe('errors say what to do and never carry secret values', () => {
  async function rejection(promise: Promise<unknown>): Promise<KubernetesRequestError> {
    const error = await promise.then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof KubernetesRequestError, `expected a KubernetesRequestError, got ${String(error)}`);
    for (const secret of ['sk-test-123', 'pw-0123456789abcdef']) assert.ok(!error.message.includes(secret), error.message);
    return error;
  }

  test('a namespace that does not exist', async (t) => {
    const { applier } = await cluster(t);
    const error = await rejection(applier.apply(desired({ namespace: 'missing' })));
    assert.match(error.message, /^Namespace missing does not exist: create it/);
  });

  test('a permission the listener lacks', async (t) => {
    const { standIn, applier } = await cluster(t);
    standIn.forbid('patch', 'secrets');
    const error = await rejection(applier.apply(desired()));
    assert.equal(error.code, 403);
    assert.match(
      error.message,
      /^The listener may not patch Secret agents\/support-agent-9d564ff8-postgres \(403: .*\)\. Grant it with the Role in deploy\/listener-kubernetes/,
    );
  });

  test('a database size change Kubernetes cannot make', async (t) => {
    const { applier } = await cluster(t);
    await applier.apply(desired());
    const error = await rejection(applier.apply(desired({ resourceSpec: { db_storage_gi: 50 } })));
    assert.equal(error.code, 422);
    assert.match(error.message, /StatefulSet agents\/support-agent-9d564ff8-postgres as invalid: .*db_storage_gi applies to new databases only/);
  });

  test('an API server that cannot be reached', async (t) => {
    const { standIn, applier } = await cluster(t);
    await standIn.close();
    const error = await rejection(applier.apply(desired()));
    assert.equal(error.code, null);
    assert.match(error.message, new RegExp(`^Cannot reach the Kubernetes API at ${standIn.url.replace(/\./g, '\\.')} .*check the listener's network access`));
  });

  test('a deployment id that could select other objects is refused before anything is deleted', async (t) => {
    const { standIn, applier } = await cluster(t);
    await applier.apply(FULL);
    const before = standIn.objects().length;
    for (const deploymentId of ['', `${DEPLOYMENT_ID},app.kubernetes.io/managed-by`, 'x!=y']) {
      await assert.rejects(applier.delete({ namespace: NAMESPACE, deploymentId }), ManifestError);
    }
    assert.equal(standIn.objects().length, before);
  });

  test('an operation the caller stops', async (t) => {
    const { applier } = await cluster(t);
    const error = await rejection(applier.list(NAMESPACE, undefined, AbortSignal.abort()));
    assert.match(error.message, /cancelled or timed out/);
  });
});
