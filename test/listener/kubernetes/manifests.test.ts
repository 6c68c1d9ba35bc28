import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubernetesObject, V1Service } from '@kubernetes/client-node';
import type { ResourceSpec } from '../../../src/domain/deployment-config.js';
import { DEFAULT_POSTGRES_IMAGE } from '../../../src/agent/kubernetes/backing-services.js';
import { DEFAULT_QUEUE_WORKER_COMMAND } from '../../../src/agent/kubernetes/server-workloads.js';
import { LABEL } from '../../../src/agent/kubernetes/names.js';
import {
  autoscaler,
  component,
  containerEnv,
  DEPLOYMENT_ID,
  database,
  desired,
  envSecret,
  mainContainer,
  NAMESPACE,
  podSpec,
  REVISION_ID,
  renderSpec,
  renderValid,
  workload,
} from './fixtures.js';

function kindsAndNames(objects: KubernetesObject[]): string[] {
  return objects.map((o) => `${o.kind} ${o.metadata?.name}`);
}

describe('renderDeployment with an empty resource spec', () => {
  const objects = renderValid(desired());

  test('renders the anchor first, backing services and secrets before the workloads that read them', () => {
    assert.deepEqual(kindsAndNames(objects), [
      'ConfigMap support-agent-9d564ff8',
      'Secret support-agent-9d564ff8-postgres',
      'Service support-agent-9d564ff8-postgres',
      'StatefulSet support-agent-9d564ff8-postgres',
      'Service support-agent-9d564ff8-redis',
      'Deployment support-agent-9d564ff8-redis',
      'Secret support-agent-9d564ff8-env',
      'Deployment support-agent-9d564ff8',
      'Service support-agent-9d564ff8',
    ]);
  });

  test("labels every object as Berth's, with the deployment and revision, in the namespace", () => {
    for (const object of objects) {
      assert.equal(object.metadata?.namespace, NAMESPACE);
      assert.equal(object.metadata?.labels?.[LABEL.managedBy], 'berth');
      assert.equal(object.metadata?.labels?.[LABEL.deploymentId], DEPLOYMENT_ID);
      assert.equal(object.metadata?.labels?.[LABEL.revisionId], REVISION_ID);
    }
  });

  test("runs the image as the API server with the API's default size, probes on GET /ok port 8000, and its environment from the Secret", () => {
    const api = workload(objects, 'api-server');
    const container = mainContainer(api);
    assert.equal(api.spec?.replicas, 1);
    assert.equal(container.image, 'registry.example.com/support-agent:1.4.2');
    assert.deepEqual(container.resources, { requests: { cpu: '1000m', memory: '2048Mi' }, limits: { cpu: '2000m', memory: '4096Mi' } });
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      assert.deepEqual(probe?.httpGet && { path: probe.httpGet.path, port: probe.httpGet.port }, { path: '/ok', port: 8000 });
    }
    assert.deepEqual(container.envFrom, [{ secretRef: { name: 'support-agent-9d564ff8-env' } }]);
    assert.equal(containerEnv(container).PORT, '8000');
    assert.equal(containerEnv(container).N_JOBS_PER_WORKER, undefined, 'without queue workers the server runs jobs itself');
    assert.equal(podSpec(api).automountServiceAccountToken, false);
  });

  test('puts the secrets and settings, and the URIs of the provisioned database and Redis, in the env Secret', () => {
    assert.deepEqual(envSecret(objects), {
      OPENAI_API_KEY: 'sk-test-123',
      LOG_LEVEL: 'debug',
      POSTGRES_URI: 'postgres://postgres:pw-0123456789abcdef@support-agent-9d564ff8-postgres.agents.svc:5432/postgres?sslmode=disable',
      REDIS_URI: 'redis://support-agent-9d564ff8-redis.agents.svc:6379',
    });
  });

  test('serves the API server on a ClusterIP Service on port 8000', () => {
    const service = component(objects, 'Service', 'api-server') as V1Service;
    assert.equal(service.spec?.type, 'ClusterIP');
    assert.deepEqual(
      service.spec?.ports?.map((p) => p.port),
      [8000],
    );
    assert.deepEqual(service.spec?.selector, workload(objects, 'api-server').spec?.selector.matchLabels);
  });

  test('labels every object with the listener that applies it, when there is one; a listener id that is no label value is refused', () => {
    const listenerId = '0b6f2a8e-3333-4333-8333-333333333333';
    for (const object of renderValid(desired({ listenerId }))) assert.equal(object.metadata?.labels?.[LABEL.listenerId], listenerId);
    for (const object of objects) assert.equal(object.metadata?.labels?.[LABEL.listenerId], undefined);
    assert.throws(
      () => renderValid(desired({ listenerId: 'not a label value' })),
      (error: Error) => error.name === 'ManifestError' && /listenerId/.test(error.message),
    );
  });

  test('provisions PostgreSQL (pgvector, as the public operator) with a claim and a headless Service', () => {
    const statefulSet = database(objects);
    assert.equal(mainContainer(statefulSet).image, DEFAULT_POSTGRES_IMAGE);
    assert.equal(statefulSet.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '8Gi');
    const service = component(objects, 'Service', 'postgres') as V1Service;
    assert.equal(service.spec?.clusterIP, 'None');
    assert.equal(statefulSet.spec?.serviceName, service.metadata?.name);
  });

  test('keeps the revision out of every selector and out of the database and Redis pods, so a new revision neither breaks updates nor restarts them', () => {
    for (const object of objects) {
      const spec = (object as { spec?: { selector?: { matchLabels?: Record<string, string> } } }).spec;
      assert.equal(spec?.selector?.matchLabels?.[LABEL.revisionId], undefined, `${object.kind} ${object.metadata?.name} selects on the revision`);
    }
    assert.equal(database(objects).spec?.template.metadata?.labels?.[LABEL.revisionId], undefined);
    assert.equal(database(objects).spec?.volumeClaimTemplates?.[0]?.metadata?.labels?.[LABEL.revisionId], undefined);
    assert.equal(workload(objects, 'redis').spec?.template.metadata?.labels?.[LABEL.revisionId], undefined);
    assert.equal(workload(objects, 'api-server').spec?.template.metadata?.labels?.[LABEL.revisionId], REVISION_ID);
  });
});

interface FieldCase {
  field: string;
  spec: ResourceSpec;
  check: (objects: KubernetesObject[]) => void;
}

const QUEUE_ON = { queue_min_scale: 1 };

/** One case per ResourceSpec field of the API; each render is validated against the schemas in renderSpec. */
const FIELD_CASES: FieldCase[] = [
  {
    field: 'min_scale',
    spec: { min_scale: 2 },
    check: (o) => {
      assert.equal(workload(o, 'api-server').spec?.replicas, 2);
      assert.equal(autoscaler(o, 'api-server'), undefined);
    },
  },
  {
    field: 'max_scale',
    spec: { max_scale: 4 },
    check: (o) => {
      const hpa = autoscaler(o, 'api-server');
      assert.deepEqual([hpa?.spec?.minReplicas, hpa?.spec?.maxReplicas, hpa?.spec?.scaleTargetRef.name], [1, 4, workload(o, 'api-server').metadata?.name]);
      assert.equal(workload(o, 'api-server').spec?.replicas, undefined, 'the HPA owns the replica count');
    },
  },
  { field: 'cpu', spec: { cpu: 0.25 }, check: (o) => assert.deepEqual(cpu(mainContainer(workload(o, 'api-server'))), ['250m', '500m']) },
  { field: 'cpu_limit', spec: { cpu_limit: 1.5 }, check: (o) => assert.deepEqual(cpu(mainContainer(workload(o, 'api-server'))), ['1000m', '1500m']) },
  { field: 'memory_mb', spec: { memory_mb: 512 }, check: (o) => assert.deepEqual(memory(mainContainer(workload(o, 'api-server'))), ['512Mi', '1024Mi']) },
  {
    field: 'memory_limit_mb',
    spec: { memory_limit_mb: 3000 },
    check: (o) => assert.deepEqual(memory(mainContainer(workload(o, 'api-server'))), ['2048Mi', '3000Mi']),
  },
  {
    field: 'queue_min_scale',
    spec: { queue_min_scale: 2 },
    check: (o) => {
      const queue = workload(o, 'queue');
      assert.equal(queue.spec?.replicas, 2);
      assert.deepEqual(mainContainer(queue).command, DEFAULT_QUEUE_WORKER_COMMAND);
      assert.equal(containerEnv(mainContainer(queue)).N_JOBS_PER_WORKER, '10');
      assert.equal(containerEnv(mainContainer(workload(o, 'api-server'))).N_JOBS_PER_WORKER, '0', 'the API server leaves jobs to the workers');
    },
  },
  {
    field: 'queue_max_scale',
    spec: { queue_max_scale: 3 },
    check: (o) => {
      const hpa = autoscaler(o, 'queue');
      assert.deepEqual([hpa?.spec?.minReplicas, hpa?.spec?.maxReplicas, hpa?.spec?.scaleTargetRef.name], [1, 3, workload(o, 'queue').metadata?.name]);
    },
  },
  { field: 'queue_cpu', spec: { ...QUEUE_ON, queue_cpu: 0.5 }, check: (o) => assert.deepEqual(cpu(mainContainer(workload(o, 'queue'))), ['500m', '1000m']) },
  {
    field: 'queue_cpu_limit',
    spec: { ...QUEUE_ON, queue_cpu_limit: 3 },
    check: (o) => assert.deepEqual(cpu(mainContainer(workload(o, 'queue'))), ['1000m', '3000m']),
  },
  {
    field: 'queue_memory_mb',
    spec: { ...QUEUE_ON, queue_memory_mb: 1024 },
    check: (o) => assert.deepEqual(memory(mainContainer(workload(o, 'queue'))), ['1024Mi', '2048Mi']),
  },
  {
    field: 'queue_memory_limit_mb',
    spec: { ...QUEUE_ON, queue_memory_limit_mb: 8192 },
    check: (o) => assert.deepEqual(memory(mainContainer(workload(o, 'queue'))), ['2048Mi', '8192Mi']),
  },
  {
    field: 'redis_memory_mb',
    spec: { redis_memory_mb: 300 },
    check: (o) => {
      const redis = mainContainer(workload(o, 'redis'));
      assert.deepEqual(redis.args, ['--maxmemory', '300mb']);
      assert.deepEqual(memory(redis), ['300Mi', '600Mi']);
    },
  },
  { field: 'db_cpu', spec: { db_cpu: 2 }, check: (o) => assert.deepEqual(cpu(mainContainer(database(o))), ['2000m', '4000m']) },
  { field: 'db_cpu_limit', spec: { db_cpu_limit: 3 }, check: (o) => assert.deepEqual(cpu(mainContainer(database(o))), ['500m', '3000m']) },
  { field: 'db_memory_mb', spec: { db_memory_mb: 2048 }, check: (o) => assert.deepEqual(memory(mainContainer(database(o))), ['2048Mi', '4096Mi']) },
  { field: 'db_memory_limit_mb', spec: { db_memory_limit_mb: 8192 }, check: (o) => assert.deepEqual(memory(mainContainer(database(o))), ['1024Mi', '8192Mi']) },
  {
    field: 'db_storage_gi',
    spec: { db_storage_gi: 20 },
    check: (o) => assert.equal(database(o).spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '20Gi'),
  },
  {
    field: 'db_max_connections',
    spec: { db_max_connections: 250 },
    check: (o) => assert.deepEqual(mainContainer(database(o)).args, ['-c', 'max_connections=250']),
  },
  {
    field: 'labels',
    spec: { labels: { team: 'agents', 'example.com/cost-center': 'c-42' } },
    check: (o) => {
      for (const object of o) assert.equal(object.metadata?.labels?.['example.com/cost-center'], 'c-42', `${object.kind} ${object.metadata?.name}`);
      assert.equal(workload(o, 'api-server').spec?.template.metadata?.labels?.team, 'agents');
      assert.equal(workload(o, 'api-server').spec?.selector.matchLabels?.team, undefined);
      assert.equal(database(o).spec?.volumeClaimTemplates?.[0]?.metadata?.labels?.team, undefined, 'claim templates cannot change later');
    },
  },
  {
    field: 'annotations',
    spec: { annotations: { 'example.com/owner': 'Ops Team <ops@example.com>' } },
    check: (o) => {
      for (const object of o) assert.equal(object.metadata?.annotations?.['example.com/owner'], 'Ops Team <ops@example.com>');
      assert.equal(workload(o, 'api-server').spec?.template.metadata?.annotations?.['example.com/owner'], 'Ops Team <ops@example.com>');
    },
  },
  {
    field: 'service_account_name',
    spec: { ...QUEUE_ON, service_account_name: 'agent-runner' },
    check: (o) => {
      for (const name of ['api-server', 'queue'] as const) {
        assert.equal(podSpec(workload(o, name)).serviceAccountName, 'agent-runner');
        assert.equal(podSpec(workload(o, name)).automountServiceAccountToken, undefined);
      }
    },
  },
  {
    field: 'image_pull_secrets',
    spec: { image_pull_secrets: [{ name: 'registry-creds' }] },
    check: (o) => assert.deepEqual(podSpec(workload(o, 'api-server')).imagePullSecrets, [{ name: 'registry-creds' }]),
  },
  {
    field: 'volumes',
    spec: { volumes: [{ name: 'config', configMap: { name: 'agent-config' } }] },
    check: (o) => assert.deepEqual(podSpec(workload(o, 'api-server')).volumes, [{ name: 'config', configMap: { name: 'agent-config' } }]),
  },
  {
    field: 'volume_mounts',
    spec: { ...QUEUE_ON, volumes: [{ name: 'scratch', emptyDir: {} }], volume_mounts: [{ name: 'scratch', mountPath: '/scratch', readOnly: false }] },
    check: (o) => {
      for (const name of ['api-server', 'queue'] as const) {
        assert.deepEqual(mainContainer(workload(o, name)).volumeMounts, [{ name: 'scratch', mountPath: '/scratch', readOnly: false }]);
      }
    },
  },
  {
    field: 'init_containers',
    spec: { init_containers: [{ name: 'wait-for-vault', image: 'busybox:1.37', command: ['sh', '-c', 'true'] }] },
    check: (o) =>
      assert.deepEqual(
        podSpec(workload(o, 'api-server')).initContainers?.map((c) => c.name),
        ['wait-for-vault'],
      ),
  },
  {
    field: 'sidecars',
    spec: { sidecars: [{ name: 'otel-collector', image: 'otel/opentelemetry-collector:0.98.0', args: ['--config=/etc/otel.yaml'] }] },
    check: (o) =>
      assert.deepEqual(
        podSpec(workload(o, 'api-server')).containers.map((c) => c.name),
        ['api-server', 'otel-collector'],
      ),
  },
  {
    field: 'orchestrator_* (no orchestrator runs on Kubernetes yet: accepted, changes nothing)',
    spec: {
      orchestrator_cpu: 1,
      orchestrator_cpu_limit: 2,
      orchestrator_memory_mb: 512,
      orchestrator_memory_limit_mb: 1024,
      orchestrator_min_scale: 1,
      orchestrator_max_scale: 2,
    },
    check: (o) => assert.deepEqual(o, renderValid(desired())),
  },
];

describe('renderDeployment, one resource_spec field at a time', () => {
  for (const { field, spec, check } of FIELD_CASES) {
    test(`resource_spec.${field}`, () => check(renderSpec(spec)));
  }
});

test('renderDeployment with every resource_spec field at once', () => {
  // Later cases turn queue workers on with queue_min_scale 1 and bring their own volumes: both are set here as a whole.
  const spec = {
    ...(Object.assign({}, ...FIELD_CASES.map((c) => c.spec)) as ResourceSpec),
    queue_min_scale: 2,
    volumes: [
      { name: 'config', configMap: { name: 'agent-config' } },
      { name: 'scratch', emptyDir: {} },
    ],
  };
  const objects = renderSpec(spec);
  const api = workload(objects, 'api-server');
  const queue = workload(objects, 'queue');
  assert.deepEqual([autoscaler(objects, 'api-server')?.spec?.minReplicas, autoscaler(objects, 'api-server')?.spec?.maxReplicas], [2, 4]);
  assert.deepEqual([autoscaler(objects, 'queue')?.spec?.minReplicas, autoscaler(objects, 'queue')?.spec?.maxReplicas], [2, 3]);
  assert.deepEqual(
    [cpu(mainContainer(api)), memory(mainContainer(api))],
    [
      ['250m', '1500m'],
      ['512Mi', '3000Mi'],
    ],
  );
  assert.deepEqual(
    [cpu(mainContainer(queue)), memory(mainContainer(queue))],
    [
      ['500m', '3000m'],
      ['1024Mi', '8192Mi'],
    ],
  );
  assert.deepEqual(
    [cpu(mainContainer(database(objects))), memory(mainContainer(database(objects)))],
    [
      ['2000m', '3000m'],
      ['2048Mi', '8192Mi'],
    ],
  );
  assert.deepEqual(mainContainer(database(objects)).args, ['-c', 'max_connections=250']);
  assert.equal(database(objects).spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '20Gi');
  assert.deepEqual(mainContainer(workload(objects, 'redis')).args, ['--maxmemory', '300mb']);
  for (const pod of [podSpec(api), podSpec(queue)]) {
    assert.equal(pod.serviceAccountName, 'agent-runner');
    assert.deepEqual(pod.imagePullSecrets, [{ name: 'registry-creds' }]);
    assert.deepEqual(
      pod.volumes?.map((v) => v.name),
      ['config', 'scratch'],
    );
    assert.deepEqual(
      pod.initContainers?.map((c) => c.name),
      ['wait-for-vault'],
    );
    assert.deepEqual(pod.containers.map((c) => c.name).slice(1), ['otel-collector']);
  }
  for (const object of objects) assert.equal(object.metadata?.labels?.team, 'agents');
});

describe('custom PostgreSQL and Redis', () => {
  test('POSTGRES_URI_CUSTOM: no database is provisioned and POSTGRES_URI points at it', () => {
    const custom = 'postgres://app:secret@db.internal:5432/agents';
    const objects = renderValid(desired({ env: { POSTGRES_URI_CUSTOM: custom }, databasePassword: undefined }));
    assert.equal(component(objects, 'StatefulSet', 'postgres'), undefined);
    assert.equal(component(objects, 'Secret', 'postgres'), undefined);
    assert.equal(envSecret(objects).POSTGRES_URI, custom);
  });

  test('REDIS_URI_CUSTOM: no Redis is provisioned and REDIS_URI points at it', () => {
    const objects = renderValid(desired({ env: { REDIS_URI_CUSTOM: 'redis://cache.internal:6379/2' } }));
    assert.equal(component(objects, 'Deployment', 'redis'), undefined);
    assert.equal(envSecret(objects).REDIS_URI, 'redis://cache.internal:6379/2');
  });

  test('the database image is configurable', () => {
    assert.equal(
      mainContainer(database(renderValid(desired({ postgresImage: 'mirror.example.com/pgvector:pg15' })))).image,
      'mirror.example.com/pgvector:pg15',
    );
  });

  test('a provisioned database needs a password', () => {
    assert.throws(() => renderValid(desired({ databasePassword: undefined })), /database password is needed/);
  });
});

test("the queue worker runs the image's own entrypoint when told to", () => {
  const objects = renderSpec(QUEUE_ON, { queueWorkerCommand: null, jobsPerWorker: 4 });
  assert.equal(mainContainer(workload(objects, 'queue')).command, undefined);
  assert.equal(containerEnv(mainContainer(workload(objects, 'queue'))).N_JOBS_PER_WORKER, '4');
});

function cpu(container: { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }): (string | undefined)[] {
  return [container.resources?.requests?.cpu, container.resources?.limits?.cpu];
}

function memory(container: { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }): (string | undefined)[] {
  return [container.resources?.requests?.memory, container.resources?.limits?.memory];
}
