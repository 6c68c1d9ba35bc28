import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { KubernetesObject, V1ConfigMap, V1Container, V1Deployment, V1PodDisruptionBudget, V1Secret, V1Service } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseEncryptionKey } from '../../src/security/encryption.js';
import { validateAgainstSchema } from '../support/kube-schemas.js';
import { deadline } from '../support/deadline.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
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

function named<T extends KubernetesObject>(objects: KubernetesObject[], kind: string, name: string): T {
  const found = objects.filter((o) => o.kind === kind && o.metadata?.name === name);
  assert.equal(found.length, 1, `expected one ${kind} ${name}, found ${found.length}`);
  return found[0] as T;
}

function containerOf(deployment: V1Deployment): V1Container {
  const containers = deployment.spec?.template.spec?.containers ?? [];
  assert.equal(containers.length, 1, `${deployment.metadata?.name} has ${containers.length} containers`);
  return containers[0] as V1Container;
}

/** The environment a container gets, values resolved from the rendered ConfigMaps and Secrets. */
function environmentOf(objects: KubernetesObject[], container: V1Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    assert.ok(source.configMapRef?.name, 'only ConfigMaps are expected in envFrom');
    Object.assign(env, named<V1ConfigMap>(objects, 'ConfigMap', source.configMapRef.name).data);
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      const secret = named<V1Secret>(objects, 'Secret', ref.name as string);
      const value = secret.stringData?.[ref.key];
      assert.notEqual(value, undefined, `${variable.name}: Secret ${ref.name} has no key ${ref.key}`);
      env[variable.name] = value as string;
    } else {
      env[variable.name] = variable.value ?? '';
    }
  }
  return env;
}

/** The Dockerfile's USER, which runAsUser must match for files in the image's /data to be writable. */
function imageUser(): number {
  const user = /^USER\s+(\d+)(?::\d+)?\s*$/m.exec(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
  assert.ok(user, 'the Dockerfile sets no numeric USER');
  return Number(user[1]);
}

function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([key, value]) => labels?.[key] === value) && Object.keys(selector ?? {}).length > 0;
}

/** What every Berth pod must have, whichever process it runs. */
function assertHardened(deployment: V1Deployment): void {
  const pod = deployment.spec?.template.spec;
  const container = containerOf(deployment);
  const name = deployment.metadata?.name;
  assert.equal(pod?.securityContext?.runAsNonRoot, true, `${name}: runAsNonRoot`);
  assert.equal(pod?.securityContext?.runAsUser, imageUser(), `${name}: runAsUser is not the image's USER`);
  assert.equal(pod?.enableServiceLinks, false, `${name}: service links would add BERTH_* variables`);
  assert.equal(container.securityContext?.readOnlyRootFilesystem, true, `${name}: readOnlyRootFilesystem`);
  assert.equal(container.securityContext?.allowPrivilegeEscalation, false, `${name}: allowPrivilegeEscalation`);
  assert.deepEqual(container.securityContext?.capabilities?.drop, ['ALL'], `${name}: capabilities`);
  // A read-only root needs somewhere writable for temporary files.
  const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
  assert.ok(tmp, `${name}: /tmp is not mounted`);
  assert.ok(pod?.volumes?.find((volume) => volume.name === tmp.name)?.emptyDir, `${name}: /tmp is not an emptyDir`);
  for (const resource of ['cpu', 'memory']) {
    assert.ok(container.resources?.requests?.[resource], `${name}: no ${resource} request`);
    assert.ok(container.resources?.limits?.[resource], `${name}: no ${resource} limit`);
  }
  assert.ok(container.livenessProbe?.httpGet, `${name}: no liveness probe`);
  assert.equal(container.livenessProbe.httpGet.path, '/ok');
}

/** The probe port, resolved from a named container port. */
function probePort(container: V1Container, port: number | string | undefined): number | undefined {
  return typeof port === 'number' ? port : container.ports?.find((p) => p.name === port)?.containerPort;
}

for (const directory of ['deploy/kubernetes', 'deploy/kubernetes/overlays/engine-separate']) {
  describe(`kubectl kustomize ${directory}`, () => {
    let rendered: Promise<KubernetesObject[]> | undefined;
    const objects = () => (rendered ??= kustomize(directory));

    test('every object matches its Kubernetes schema and lives in the berth namespace', async () => {
      for (const object of await objects()) {
        validateAgainstSchema(object);
        if (object.kind !== 'Namespace') assert.equal(object.metadata?.namespace, 'berth', `${object.kind} ${object.metadata?.name}`);
        assert.equal(object.metadata?.labels?.['app.kubernetes.io/part-of'], 'berth', `${object.kind} ${object.metadata?.name}`);
      }
    });

    test('the server: two replicas on PostgreSQL, keys from a Secret, probes on /ok, hardened', async () => {
      const all = await objects();
      const server = named<V1Deployment>(all, 'Deployment', 'berth-server');
      assert.equal(server.spec?.replicas, 2);
      const container = containerOf(server);
      assert.deepEqual(container.args, ['serve']);
      assertHardened(server);
      for (const variable of ['DATABASE_URL', 'BERTH_ENCRYPTION_KEY', 'BERTH_BOOTSTRAP_API_KEY']) {
        const entry = container.env?.find((e) => e.name === variable);
        assert.ok(entry?.valueFrom?.secretKeyRef, `${variable} does not come from a Secret`);
      }
      const env = environmentOf(all, container);
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
        assert.equal(probe?.httpGet?.path, '/ok');
        assert.equal(probePort(container, probe?.httpGet?.port), Number(env.PORT), 'a probe asks another port than Berth listens on');
      }
      assert.equal(env.HOST, '0.0.0.0', 'Berth would listen on loopback only, out of reach of probes and the Service');
    });

    test('the Service and the disruption budget select the server pods, and only them', async () => {
      const all = await objects();
      const server = named<V1Deployment>(all, 'Deployment', 'berth-server');
      const serverLabels = server.spec?.template.metadata?.labels;
      const service = named<V1Service>(all, 'Service', 'berth');
      assert.ok(selects(service.spec?.selector, serverLabels), 'the Service does not select the server pods');
      assert.equal(service.spec?.ports?.[0]?.targetPort, 'http');
      const budget = named<V1PodDisruptionBudget>(all, 'PodDisruptionBudget', 'berth-server');
      assert.ok(selects(budget.spec?.selector?.matchLabels, serverLabels), 'the budget does not select the server pods');
      for (const other of all.filter((o): o is V1Deployment => o.kind === 'Deployment' && o.metadata?.name !== 'berth-server')) {
        assert.ok(!selects(service.spec?.selector, other.spec?.template.metadata?.labels), `the Service also selects ${other.metadata?.name}`);
      }
    });

    test('applied unchanged, the placeholder Secrets make Berth refuse to start', async () => {
      const all = await objects();
      const env = environmentOf(all, containerOf(named<V1Deployment>(all, 'Deployment', 'berth-server')));
      // An empty DATABASE_URL would mean SQLite inside each pod: two replicas, two databases.
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, /DATABASE_URL/);
          assert.match(error.message, /BERTH_BOOTSTRAP_API_KEY/);
          return true;
        },
      );
      assert.throws(() => parseEncryptionKey(env.BERTH_ENCRYPTION_KEY as string), /BERTH_ENCRYPTION_KEY/);
    });
  });
}

describe('the engine-separate overlay', () => {
  test('runs the server with BERTH_ENGINE=off and `berth engine` apart, on the same database, keys and image', async () => {
    const all = await kustomize('deploy/kubernetes/overlays/engine-separate');
    const server = containerOf(named<V1Deployment>(all, 'Deployment', 'berth-server'));
    const engineDeployment = named<V1Deployment>(all, 'Deployment', 'berth-engine');
    const engine = containerOf(engineDeployment);
    assertHardened(engineDeployment);
    assert.deepEqual(engine.args, ['engine']);
    assert.equal(engine.image, server.image);

    const serverEnv = environmentOf(all, server);
    const engineEnv = environmentOf(all, engine);
    assert.equal(serverEnv.BERTH_ENGINE, 'off');
    assert.equal(engineEnv.BERTH_ENGINE, undefined);
    const secretRef = (container: V1Container, variable: string) => container.env?.find((e) => e.name === variable)?.valueFrom?.secretKeyRef;
    for (const variable of ['DATABASE_URL', 'BERTH_ENCRYPTION_KEY']) assert.deepEqual(secretRef(engine, variable), secretRef(server, variable), variable);
    // The engine's probes and metrics are on the port `berth engine` serves them on.
    assert.equal(probePort(engine, engine.livenessProbe?.httpGet?.port), Number(engineEnv.BERTH_ENGINE_METRICS_PORT));
    assert.equal(engineDeployment.spec?.template.metadata?.annotations?.['prometheus.io/port'], engineEnv.BERTH_ENGINE_METRICS_PORT);
  });

  test('leaves the base without an engine Deployment and with the engine inside the server', async () => {
    const all = await kustomize('deploy/kubernetes');
    assert.equal(all.filter((o) => o.kind === 'Deployment').length, 1);
    assert.equal(environmentOf(all, containerOf(named<V1Deployment>(all, 'Deployment', 'berth-server'))).BERTH_ENGINE, undefined);
  });
});
