import assert from 'node:assert/strict';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, type TestContext, test } from 'node:test';
import type { RunnerJobView } from '../../src/contract/build-runners.js';
import { runJob } from '../../src/runner/job.js';
import { kubernetesDriverFor } from '../../src/runner/kubernetes/executor.js';
import { buildObjectName, type PodJob } from '../../src/runner/kubernetes/manifests.js';
import { logLine, resultLine } from '../../src/runner/kubernetes/pod-lines.js';
import { validateAgainstSchema } from '../support/kube-schemas.js';
import { type KubeObject, KubeStandIn } from '../support/kube-stand-in.js';
import { eventually } from '../support/runtimes.js';
import { CONFIG, capturedLogger, claimedJob, FakeControlPlane, GIT_PASSWORD, NAMESPACE, PUSH_PASSWORD } from './kubernetes-fixtures.js';

interface Build {
  standIn: KubeStandIn;
  plane: FakeControlPlane;
  job: RunnerJobView;
  name: string;
  /** The runner's log, every line. */
  logged: () => string;
  stop: AbortController;
  done: Promise<void>;
}

/** Claims `job` (as runJob does after a claim) with the Kubernetes executor against a fresh stand-in. */
async function startBuild(t: TestContext, job = claimedJob(), prepare?: (standIn: KubeStandIn) => void): Promise<Build> {
  const standIn = await KubeStandIn.start({ namespaces: [NAMESPACE] });
  t.after(() => standIn.close());
  prepare?.(standIn);
  const plane = new FakeControlPlane();
  const { logger, text } = capturedLogger();
  const stop = new AbortController();
  t.after(() => stop.abort());
  const driverFor = kubernetesDriverFor(CONFIG, standIn.kubeConfig(NAMESPACE), { pollMs: 20, logGraceMs: 200 });
  const done = runJob(plane.client(), job, driverFor, logger, stop.signal, { archives: '/nonexistent/archives', spool: '/nonexistent/spool' }).then(
    () => undefined,
  );
  return { standIn, plane, job, name: buildObjectName(job.id, job.lease_token), logged: text, stop, done };
}

function created(build: Build, kind: 'Job' | 'Secret'): Promise<KubeObject> {
  return eventually(async () => build.standIn.object(kind, NAMESPACE, build.name), `the build's ${kind}`);
}

/** Plays the Job controller and the kubelet: a running pod for the Job. */
async function runningPod(build: Build): Promise<string> {
  await created(build, 'Secret');
  return build.standIn.addPod('Job', NAMESPACE, build.name, { phase: 'Running' });
}

function finish(build: Build, pod: string, condition: { type: 'Complete' | 'Failed'; reason?: string; message?: string }): void {
  build.standIn.edit('Pod', NAMESPACE, pod, (object) => {
    object.status = { phase: condition.type === 'Complete' ? 'Succeeded' : 'Failed' };
  });
  build.standIn.endLog(NAMESPACE, pod);
  build.standIn.setStatus('Job', NAMESPACE, build.name, {
    ...(condition.type === 'Complete' ? { succeeded: 1 } : { failed: 1 }),
    conditions: [{ type: condition.type, status: 'True', ...(condition.reason ? { reason: condition.reason, message: condition.message ?? '' } : {}) }],
  });
}

function assertCleanedUp(build: Build): void {
  assert.equal(build.standIn.object('Job', NAMESPACE, build.name), undefined, 'the Job was not deleted');
  assert.equal(build.standIn.object('Secret', NAMESPACE, build.name), undefined, 'the Secret was not deleted');
  const deletes = build.standIn.requests.filter((r) => r.method === 'DELETE').map((r) => r.path);
  assert.ok(deletes.includes(`/apis/batch/v1/namespaces/${NAMESPACE}/jobs/${build.name}`));
  assert.ok(deletes.includes(`/api/v1/namespaces/${NAMESPACE}/secrets/${build.name}`));
}

function assertNoCredential(build: Build): void {
  // The lease token travels in every call by design; what is checked is what a person reads.
  const reports = build.plane.results.map(({ lease_token: _token, ...rest }) => rest);
  const everywhere = [build.logged(), ...build.plane.lines, JSON.stringify(reports)].join('\n');
  for (const secret of [PUSH_PASSWORD, GIT_PASSWORD, build.job.lease_token]) assert.ok(!everywhere.includes(secret), 'a credential reached a log or report');
}

const IMAGE_RESULT = { image: claimedJob().image, digest: 'sha256:0123', commitSha: 'c0ffee', env: { MODE: 'prod' } };

describe('builds as Kubernetes Jobs (against the API-server stand-in)', () => {
  test('a claimed job becomes a Job and a Secret with the right spec, credentials only in the Secret', async (t) => {
    const build = await startBuild(t);
    const job = await created(build, 'Job');
    const secret = await created(build, 'Secret');
    validateAgainstSchema(job as unknown as KubernetesObject);
    validateAgainstSchema(secret as unknown as KubernetesObject);
    const spec = job.spec as { activeDeadlineSeconds: number; template: { spec: { containers: { resources: unknown; env: { value: string }[] }[] } } };
    assert.equal(spec.activeDeadlineSeconds, 900);
    assert.deepEqual(spec.template.spec.containers[0]?.resources, { requests: { cpu: '500m', memory: '1024Mi' }, limits: { cpu: '1000m', memory: '3072Mi' } });
    assert.doesNotMatch(JSON.stringify(job), new RegExp(`${PUSH_PASSWORD}|${GIT_PASSWORD}`));
    assert.deepEqual(
      secret.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
      [['Job', build.name, job.metadata.uid]],
    );
    const podJob = JSON.parse(Buffer.from((secret.data as Record<string, string>)['job.json'] ?? '', 'base64').toString('utf8')) as PodJob;
    assert.deepEqual(podJob.source, {
      kind: 'git',
      url: 'https://github.com/acme/agent.git',
      ref: 'main',
      credentials: { kind: 'basic', username: 'x-access-token', password: GIT_PASSWORD },
    });
    assert.equal(podJob.push?.password, PUSH_PASSWORD);
    const patches = build.standIn.requests.filter((r) => r.method === 'PATCH');
    assert.ok(patches.every((r) => r.query.get('fieldManager') === 'berth-builder'));
    build.stop.abort();
    await build.done;
  });

  test("the pod's log reaches the build log in order, the result is reported, and the Job and Secret are deleted", async (t) => {
    const build = await startBuild(t);
    const pod = await runningPod(build);
    await eventually(async () => build.standIn.logFollowers(NAMESPACE, pod) > 0, 'the runner following the log');
    build.standIn.writeLog(NAMESPACE, pod, [logLine('INFO', 'Cloning main'), 'STEP 1/4: FROM python:3.12', logLine('INFO', `pushing with ${PUSH_PASSWORD}`)]);
    build.standIn.writeLog(NAMESPACE, pod, [resultLine(IMAGE_RESULT).trim()]);
    finish(build, pod, { type: 'Complete' });
    await build.done;
    assert.deepEqual(build.plane.results, [
      {
        lease_token: build.job.lease_token,
        status: 'succeeded',
        image: IMAGE_RESULT.image,
        digest: 'sha256:0123',
        commit_sha: 'c0ffee',
        env: { MODE: 'prod' },
      },
    ]);
    const lines = build.plane.lines;
    assert.deepEqual(
      lines.filter((line) => !line.startsWith('INFO Building in Kubernetes')),
      ['INFO Cloning main', 'INFO STEP 1/4: FROM python:3.12', 'INFO pushing with [redacted]'],
    );
    assert.deepEqual(
      build.plane.batches.map((b) => b.seq),
      build.plane.batches.map((_, i) => i),
    );
    assertCleanedUp(build);
    assertNoCredential(build);
  });

  test('a failed build reports its last error line, and cleans up', async (t) => {
    const build = await startBuild(t);
    const pod = await runningPod(build);
    build.standIn.writeLog(NAMESPACE, pod, [logLine('ERROR', `langgraph.json not found (token ${GIT_PASSWORD})`)]);
    finish(build, pod, { type: 'Failed', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' });
    await build.done;
    assert.deepEqual(build.plane.results, [{ lease_token: build.job.lease_token, status: 'failed', message: 'langgraph.json not found (token [redacted])' }]);
    assertCleanedUp(build);
    assertNoCredential(build);
  });

  test('a build past build_timeout_seconds (the Job deadline) fails saying so, even if its pod never ran', async (t) => {
    const build = await startBuild(t);
    await created(build, 'Secret');
    build.standIn.addPod('Job', NAMESPACE, build.name, { phase: 'Pending' });
    build.standIn.setStatus('Job', NAMESPACE, build.name, {
      failed: 1,
      conditions: [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' }],
    });
    await build.done;
    assert.equal(build.plane.results.length, 1);
    assert.equal(build.plane.results[0]?.status, 'failed');
    assert.match(build.plane.results[0]?.message ?? '', /longer than 900 s \(build_timeout_seconds\)/);
    assertCleanedUp(build);
  });

  test('a builder image that cannot be pulled fails at once, naming BERTH_BUILDER_IMAGE', async (t) => {
    const build = await startBuild(t);
    await created(build, 'Secret');
    build.standIn.addPod('Job', NAMESPACE, build.name, {
      phase: 'Pending',
      containerStatuses: [
        {
          name: 'build',
          ready: false,
          restartCount: 0,
          image: '',
          imageID: '',
          state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } },
        },
      ],
    });
    await build.done;
    assert.match(build.plane.results[0]?.message ?? '', /cannot start \(ImagePullBackOff: Back-off pulling image\): check BERTH_BUILDER_IMAGE/);
    assertCleanedUp(build);
  });

  test('an interrupted build (Berth answers cancel) deletes the Job and the Secret and reports nothing', async (t) => {
    const build = await startBuild(t, claimedJob({ lease_seconds: 1 }));
    const pod = await runningPod(build);
    await eventually(async () => build.standIn.logFollowers(NAMESPACE, pod) > 0, 'the runner following the log');
    build.plane.cancel = true;
    await build.done;
    assert.deepEqual(build.plane.results, []);
    assertCleanedUp(build);
    assert.equal(build.standIn.logFollowers(NAMESPACE, pod), 0, 'the runner still follows the log');
  });

  test('a runner that stops mid-build deletes the Job and the Secret', async (t) => {
    const build = await startBuild(t);
    await runningPod(build);
    build.stop.abort();
    await build.done;
    assert.deepEqual(build.plane.results, []);
    assertCleanedUp(build);
  });

  test('a dropped log connection is followed again from where it was: no line lost or repeated', async (t) => {
    const build = await startBuild(t);
    const pod = await runningPod(build);
    await eventually(async () => build.standIn.logFollowers(NAMESPACE, pod) > 0, 'the runner following the log');
    build.standIn.writeLog(NAMESPACE, pod, [logLine('INFO', 'one'), logLine('INFO', 'two')]);
    await eventually(async () => build.plane.lines.includes('INFO two'), 'the first lines relayed');
    build.standIn.dropLogStreams(NAMESPACE, pod);
    build.standIn.writeLog(NAMESPACE, pod, [logLine('INFO', 'three')]);
    await eventually(async () => build.standIn.logFollowers(NAMESPACE, pod) > 0, 'the runner following the log again');
    build.standIn.writeLog(NAMESPACE, pod, [logLine('INFO', 'four'), resultLine(IMAGE_RESULT).trim()]);
    finish(build, pod, { type: 'Complete' });
    await build.done;
    assert.deepEqual(
      build.plane.lines.filter((line) => /^INFO (one|two|three|four)$/.test(line)),
      ['INFO one', 'INFO two', 'INFO three', 'INFO four'],
    );
    assert.equal(build.plane.results[0]?.status, 'succeeded');
  });

  test("a pod that ends without a result is a failure; a Job of the build job's earlier claim is deleted first", async (t) => {
    const earlier = buildObjectName(claimedJob().id, 'an-earlier-lease');
    const build = await startBuild(t, claimedJob(), (standIn) => {
      standIn.addObject({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: earlier, namespace: NAMESPACE, labels: { 'app.kubernetes.io/managed-by': 'berth', 'berth.dev/build-job-id': claimedJob().id } },
      });
    });
    const pod = await runningPod(build);
    assert.equal(build.standIn.object('Job', NAMESPACE, earlier), undefined);
    finish(build, pod, { type: 'Complete' });
    await build.done;
    assert.match(build.plane.results[0]?.message ?? '', /finished without reporting an image/);
    assertCleanedUp(build);
  });

  test('a runner the Role does not let create Jobs fails the build saying which permission, and logs no credential', async (t) => {
    const build = await startBuild(t, claimedJob(), (standIn) => standIn.forbid('patch', 'jobs'));
    await build.done;
    assert.match(build.plane.results[0]?.message ?? '', /may not patch Job builds\/berth-build-.* \(403.*deploy\/builder-kubernetes/);
    assertNoCredential(build);
  });
});
