import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import pino from 'pino';
import { ListenerAgent } from '../../../src/agent/agent.js';
import type { AgentConfig } from '../../../src/agent/config.js';
import { KubernetesCompute, serviceUrl } from '../../../src/agent/kubernetes/compute.js';
import { kubernetesNames, LABEL } from '../../../src/agent/kubernetes/names.js';
import { KubeStandIn } from '../../support/kube-stand-in.js';
import { eventually } from '../../support/runtimes.js';
import { ProtocolStandIn } from '../agent/protocol-stand-in.js';

const NAMESPACE = 'agents';
const OTHER_NAMESPACE = 'agents-b';
const CONVERGE_MS = 15_000;
/** Every deployment brings its own URIs here: no database or Redis to wait for, unless a test wants them. */
const CUSTOM_BACKENDS = [
  { name: 'POSTGRES_URI_CUSTOM', value: 'postgres://db.example:5432/agent' },
  { name: 'REDIS_URI_CUSTOM', value: 'redis://cache.example:6379' },
];

/**
 * The Kubernetes agent's reconcile loop, end to end in one process: Berth's side is the
 * protocol stand-in, the cluster is the Kubernetes API stand-in (no scheduler or
 * controllers: the tests play them), and between them the real agent with its real
 * applier and the official client.
 */
describe('berth listener on Kubernetes (protocol stand-in, Kubernetes API stand-in)', () => {
  const berth = new ProtocolStandIn();
  let cluster: KubeStandIn;
  const dataDirs: string[] = [];
  const agents: ListenerAgent[] = [];
  const logged: string[] = [];
  let agent: ListenerAgent;

  function startAgent(resyncSeconds = 3600): ListenerAgent {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-k8s-agent-'));
    dataDirs.push(dataDir);
    const config: AgentConfig = {
      berthUrl: `http://127.0.0.1:${berth.port}`,
      listenerKey: berth.key,
      dataDir,
      compute: { kind: 'k8s', namespace: NAMESPACE, resyncSeconds },
      pollSeconds: 1,
      logLevel: 'info',
    };
    const logger = pino({ level: 'info' }, { write: (line: string) => logged.push(line) });
    const started = new ListenerAgent(
      config,
      new KubernetesCompute(cluster.kubeConfig(), config.compute as { namespace: string; resyncSeconds: number }),
      logger,
      {
        backoff: { baseMs: 50, capMs: 200 },
      },
    );
    void started.run().catch((error: unknown) => logged.push(`agent failed: ${String(error)}`));
    agents.push(started);
    return started;
  }

  /** Plays the controllers: every Deployment and StatefulSet in the namespace finishes its rollout. */
  function rollOutEverything(namespace = NAMESPACE): void {
    for (const kind of ['Deployment', 'StatefulSet'] as const) {
      for (const object of cluster.objects({ kind, namespace })) cluster.markRolledOut(kind, namespace, object.metadata.name);
    }
  }

  const reportsOf = (revisionId: string) => berth.revisionReports.filter((report) => report.revision_id === revisionId).map((r) => `${r.status}:${r.outcome}`);
  const apiServer = (deployment: { deployment_id: string; deployment_name: string }, namespace = NAMESPACE) =>
    cluster.object('Deployment', namespace, kubernetesNames(deployment.deployment_name, deployment.deployment_id).apiServer) as V1Deployment | undefined;
  const imageOf = (deployment: { deployment_id: string; deployment_name: string }, namespace = NAMESPACE) =>
    apiServer(deployment, namespace)?.spec?.template.spec?.containers[0]?.image;
  const objectsOf = (deploymentId: string, namespace = NAMESPACE) =>
    cluster
      .objects({ namespace })
      .filter((o) => o.kind !== 'Event' && o.kind !== 'Pod' && o.metadata.labels?.[LABEL.deploymentId] === deploymentId)
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .sort();

  const uidOf = (object: string, namespace = NAMESPACE) => cluster.objects({ namespace }).find((o) => `${o.kind}/${o.metadata.name}` === object)?.metadata.uid;

  before(async () => {
    cluster = await KubeStandIn.start({ namespaces: [NAMESPACE, OTHER_NAMESPACE] });
    await berth.start();
    agent = startAgent();
  });

  after(async () => {
    for (const started of agents) await started.stop();
    await berth.stop();
    await cluster.close();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  let first = { deployment_id: '', deployment_name: '', revision_id: '' };

  test('a placed deployment is applied, stays DEPLOYING until its pods are ready, then is DEPLOYED at its Service', async () => {
    first = berth.place('support-agent', 'registry.example.com/agent:1', 60, { secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-live-1' }] });
    await eventually(async () => apiServer(first) !== undefined, 'the API server Deployment to be applied', CONVERGE_MS);
    // The database and Redis are provisioned too (no custom URIs): nothing is ready until they are.
    assert.ok(cluster.object('StatefulSet', NAMESPACE, kubernetesNames(first.deployment_name, first.deployment_id).postgres), 'a database StatefulSet');
    const objects = cluster.objects({ namespace: NAMESPACE }).filter((o) => o.metadata.labels?.[LABEL.deploymentId] === first.deployment_id);
    assert.ok(
      objects.every((o) => o.metadata.labels?.[LABEL.listenerId] === berth.listenerId),
      'every object says which listener applied it',
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(berth.statusOf(first.deployment_id), 'DEPLOYING', 'not DEPLOYED while no pod is ready');

    rollOutEverything();
    await eventually(async () => berth.statusOf(first.deployment_id) === 'DEPLOYED', 'DEPLOYED once the pods are ready', CONVERGE_MS);
    assert.equal(berth.urlOf(first.deployment_id), serviceUrl(first, NAMESPACE));
    assert.match(berth.urlOf(first.deployment_id) ?? '', /^http:\/\/support-agent-[0-9a-f]{8}\.agents\.svc\.cluster\.local:8000$/);
    assert.deepEqual(reportsOf(first.revision_id), ['DEPLOYING:applied', 'DEPLOYED:applied']);
    const deployedReport = berth.revisionReports.find((r) => r.revision_id === first.revision_id && r.status === 'DEPLOYED');
    assert.ok((deployedReport?.logs ?? 0) >= 2, 'the deploy log says what was applied and what it waited for');
    const secret = cluster.object('Secret', NAMESPACE, kubernetesNames(first.deployment_name, first.deployment_id).env) as { data?: Record<string, string> };
    assert.equal(Buffer.from(secret.data?.OPENAI_API_KEY ?? '', 'base64').toString(), 'sk-live-1');
    assert.deepEqual(berth.rejectedBodies, [], 'every body the agent sent matches the contract');
  });

  test('a new image rolls out to the same objects, and is DEPLOYED only once the new pods are ready', async () => {
    const before = objectsOf(first.deployment_id);
    const revisionId = berth.update(first.deployment_id, 'registry.example.com/agent:2');
    await eventually(async () => imageOf(first) === 'registry.example.com/agent:2', 'the new image to be applied', CONVERGE_MS);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // The old pods are ready, but they run the old revision.
    assert.equal(berth.statusOf(first.deployment_id), 'DEPLOYING');
    rollOutEverything();
    await eventually(async () => berth.statusOf(first.deployment_id) === 'DEPLOYED', 'the new revision DEPLOYED', CONVERGE_MS);
    assert.deepEqual(objectsOf(first.deployment_id), before, 'the same objects, updated in place');
    first = { ...first, revision_id: revisionId };
  });

  test('an image that cannot be pulled fails at the deploy timeout with the reason, and the previous revision is applied again', async () => {
    const revisionId = berth.update(first.deployment_id, 'registry.example.com/agent:missing');
    const current = berth.deployments.get(first.deployment_id);
    berth.deployments.set(first.deployment_id, { ...current!, deploy_timeout_seconds: 3 });
    await eventually(async () => imageOf(first) === 'registry.example.com/agent:missing', 'the new image to be applied', CONVERGE_MS);
    const workload = kubernetesNames(first.deployment_name, first.deployment_id).apiServer;
    cluster.addPod(
      'Deployment',
      NAMESPACE,
      workload,
      {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'api-server',
            ready: false,
            restartCount: 0,
            image: 'x',
            imageID: '',
            state: { waiting: { reason: 'ImagePullBackOff', message: 'manifest unknown' } },
          },
        ],
      },
      { [LABEL.revisionId]: revisionId },
    );
    await eventually(async () => reportsOf(revisionId).includes('DEPLOY_FAILED:applied'), 'DEPLOY_FAILED', CONVERGE_MS);
    const failed = berth.revisionReports.find((r) => r.revision_id === revisionId && r.status === 'DEPLOY_FAILED');
    assert.match(failed?.message ?? '', /cannot pull image registry\.example\.com\/agent:missing .*manifest unknown/);
    // Berth's target is the serving revision again: the agent puts its image back.
    await eventually(async () => imageOf(first) === 'registry.example.com/agent:2', 'the serving revision to be applied again', CONVERGE_MS);
    assert.equal(berth.deployments.get(first.deployment_id)?.revision_id, first.revision_id);
  });

  test('a namespace that does not exist fails the revision at once, saying so', async () => {
    const lost = berth.place('lost-agent', 'registry.example.com/agent:1', 600, { namespace: 'nowhere', secrets: CUSTOM_BACKENDS });
    await eventually(async () => reportsOf(lost.revision_id).includes('DEPLOY_FAILED:applied'), 'DEPLOY_FAILED', CONVERGE_MS);
    const failed = berth.revisionReports.find((r) => r.revision_id === lost.revision_id && r.status === 'DEPLOY_FAILED');
    assert.match(failed?.message ?? '', /nowhere/);
  });

  test('drift is undone on the resync period: an image edited by hand is applied back', async () => {
    // A second agent for the same listener would fight the first: stop it, resync quickly from a new one.
    await agent.stop();
    agent = startAgent(1);
    const name = kubernetesNames(first.deployment_name, first.deployment_id).apiServer;
    cluster.edit('Deployment', NAMESPACE, name, (object) => {
      const spec = object.spec as { template: { spec: { containers: { image: string }[] } } };
      spec.template.spec.containers[0]!.image = 'registry.example.com/hand-edited:latest';
    });
    await eventually(async () => imageOf(first) === 'registry.example.com/agent:2', 'the drift to be undone', CONVERGE_MS);
  });

  test('a restart mid-rollout finishes the rollout once, on the same objects', async () => {
    const second = berth.place('second-agent', 'registry.example.com/agent:1', 60, { secrets: CUSTOM_BACKENDS });
    await eventually(async () => apiServer(second) !== undefined, 'the Deployment to be applied', CONVERGE_MS);
    await agent.stop();
    // The stop may fall between two objects of the apply: those written before it must be
    // the same objects afterwards (same uid, not made again), the rest added once.
    const uids = () => new Map(objectsOf(second.deployment_id).map((object) => [object, uidOf(object)]));
    const before = uids();
    agent = startAgent();
    rollOutEverything();
    await eventually(async () => berth.statusOf(second.deployment_id) === 'DEPLOYED', 'DEPLOYED after the restart', CONVERGE_MS);
    const after = uids();
    for (const [object, uid] of before) assert.equal(after.get(object), uid, `${object} is the object written before the restart`);
    // With its own database and cache (CUSTOM_BACKENDS), a deployment is these four objects.
    assert.deepEqual(
      [...after.keys()].map((object) => object.split('/')[0]),
      ['ConfigMap', 'Deployment', 'Secret', 'Service'],
      'every object of the deployment, once',
    );
    const statuses = reportsOf(second.revision_id);
    assert.equal(statuses.filter((s) => s === 'DEPLOYED:applied').length, 1, statuses.join(', '));
    assert.ok(!statuses.some((s) => s.startsWith('DEPLOY_FAILED')), statuses.join(', '));
  });

  test("objects this listener applied for a deployment it no longer has are removed; another listener's are not", async () => {
    const ghost = '7c0c0c0c-0000-4000-8000-00000000dead';
    const foreign = '7c0c0c0c-0000-4000-8000-00000000f0e1';
    const labels = (deploymentId: string, listenerId: string) => ({
      [LABEL.managedBy]: 'berth',
      [LABEL.deploymentId]: deploymentId,
      [LABEL.listenerId]: listenerId,
    });
    cluster.addObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ghost', namespace: NAMESPACE, labels: labels(ghost, berth.listenerId) } });
    cluster.addObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'foreign', namespace: NAMESPACE, labels: labels(foreign, 'another-listener') },
    });
    // The scan runs when the desired state changes.
    berth.place('trigger', 'registry.example.com/agent:1', 60, { secrets: CUSTOM_BACKENDS, namespace: OTHER_NAMESPACE });
    await eventually(async () => cluster.object('ConfigMap', NAMESPACE, 'ghost') === undefined, 'the orphan to be removed', CONVERGE_MS);
    assert.ok(cluster.object('ConfigMap', NAMESPACE, 'foreign'), "another listener's object stays");
  });

  test('a deletion removes every object of the deployment, then is reported', async () => {
    assert.ok(objectsOf(first.deployment_id).length > 5);
    berth.remove(first.deployment_id);
    await eventually(
      async () => berth.deletionReports.some((r) => r.deployment_id === first.deployment_id && r.outcome === 'applied'),
      'the deletion report',
      CONVERGE_MS,
    );
    cluster.collectGarbage();
    assert.deepEqual(objectsOf(first.deployment_id), []);
  });

  test('no secret value appears in the agent log', () => {
    const log = logged.join('');
    assert.ok(log.includes('berth listener running'), 'the agent logged');
    for (const secret of ['sk-live-1', berth.key, 'postgres://db.example']) assert.ok(!log.includes(secret), `the log holds ${secret.slice(0, 8)}…`);
  });
});
