import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { executorOf, KubernetesBuildConfigError, loadKubernetesBuildConfig } from '../../src/runner/kubernetes/config.js';
import { BUILD_LABEL, type BuildJobInput, buildObjectName, renderBuildJob, renderBuildSecret, type PodJob } from '../../src/runner/kubernetes/manifests.js';
import { parsePodLine, redactor, resultLine } from '../../src/runner/kubernetes/pod-lines.js';
import { validateAgainstSchema } from '../support/kube-schemas.js';
import { GIT_PASSWORD, NAMESPACE, PUSH_PASSWORD } from './kubernetes-fixtures.js';

const INPUT: BuildJobInput = {
  namespace: NAMESPACE,
  name: buildObjectName('0B6F2A43-1111-4111-8111-111111111111', 'lease'),
  buildJobId: '0B6F2A43-1111-4111-8111-111111111111',
  workspaceId: '1c7a3b54-2222-4222-8222-222222222222',
  deploymentId: '2d8b4c65-3333-4333-8333-333333333333',
  revisionId: '3e9c5d76-4444-4444-8444-444444444444',
  builderImage: 'registry.example.com/berth:1.0',
  resources: { cpu: 0.5, memoryMb: 1024, cpuLimit: 1, memoryLimitMb: 3072 },
  timeoutSeconds: 900,
  ttlSecondsAfterFinished: 600,
};

const POD_JOB: PodJob = {
  image: 'registry.example.com/berth/ws/support-agent:rev',
  graph_config_path: 'langgraph.json',
  install_command: null,
  build_command: null,
  workspace_id: INPUT.workspaceId,
  deployment_id: INPUT.deploymentId,
  deployment_name: 'support-agent',
  revision_id: INPUT.revisionId,
  source: { kind: 'git', url: 'https://github.com/acme/agent.git', ref: 'main', credentials: { kind: 'basic', username: 'x', password: GIT_PASSWORD } },
  push: {
    registry: 'registry.example.com',
    path_prefix: 'berth',
    repository: 'berth/ws/support-agent',
    tls_verify: true,
    username: 'u',
    password: PUSH_PASSWORD,
  },
};

function container(): V1Container {
  const found = renderBuildJob(INPUT).spec?.template.spec?.containers[0];
  assert.ok(found);
  return found;
}

describe('build Job manifests', () => {
  test('the Job and its Secret match the Kubernetes schemas', () => {
    const job = renderBuildJob(INPUT);
    validateAgainstSchema(job);
    validateAgainstSchema(renderBuildSecret(INPUT, POD_JOB, { ...job, metadata: { ...job.metadata, uid: '5f0e7e87-5555-4555-8555-555555555555' } }));
    validateAgainstSchema(renderBuildJob({ ...INPUT, serviceAccountName: 'berth-build' }));
  });

  test('the pod is rootless: non-root, no privilege escalation, no capabilities, RuntimeDefault seccomp, buildah with chroot and vfs', () => {
    const spec = renderBuildJob(INPUT).spec?.template.spec;
    assert.equal(spec?.securityContext?.runAsNonRoot, true);
    assert.notEqual(spec?.securityContext?.runAsUser, 0);
    assert.equal(spec?.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    assert.equal(spec?.automountServiceAccountToken, false);
    assert.equal(spec?.restartPolicy, 'Never');
    const security = container().securityContext;
    assert.equal(security?.runAsNonRoot, true);
    assert.equal(security?.allowPrivilegeEscalation, false);
    assert.equal(security?.privileged, false);
    assert.deepEqual(security?.capabilities, { drop: ['ALL'] });
    assert.equal(security?.seccompProfile?.type, 'RuntimeDefault');
    const env = Object.fromEntries((container().env ?? []).map((e) => [e.name, e.value]));
    assert.equal(env.BUILDAH_ISOLATION, 'chroot');
    assert.equal(env.STORAGE_DRIVER, 'vfs');
  });

  test('resources, deadline, time to live, no retry and owner labels come from the job', () => {
    const job = renderBuildJob(INPUT);
    assert.equal(job.spec?.activeDeadlineSeconds, 900);
    assert.equal(job.spec?.ttlSecondsAfterFinished, 600);
    assert.equal(job.spec?.backoffLimit, 0);
    assert.deepEqual(container().resources, { requests: { cpu: '500m', memory: '1024Mi' }, limits: { cpu: '1000m', memory: '3072Mi' } });
    for (const labels of [job.metadata?.labels, job.spec?.template.metadata?.labels]) {
      assert.equal(labels?.[BUILD_LABEL.managedBy], 'berth');
      assert.equal(labels?.[BUILD_LABEL.buildJobId], INPUT.buildJobId.toLowerCase());
      assert.equal(labels?.[BUILD_LABEL.deploymentId], INPUT.deploymentId);
      assert.equal(labels?.[BUILD_LABEL.revisionId], INPUT.revisionId);
    }
  });

  test('credentials are only in the Secret, mounted read-only as a file, owned by the Job', () => {
    const job = renderBuildJob(INPUT);
    assert.doesNotMatch(JSON.stringify(job), new RegExp(`${PUSH_PASSWORD}|${GIT_PASSWORD}`));
    const mount = container().volumeMounts?.find((m) => m.name === 'job');
    assert.equal(mount?.readOnly, true);
    assert.equal(job.spec?.template.spec?.volumes?.find((v) => v.name === 'job')?.secret?.secretName, INPUT.name);
    assert.equal(container().envFrom, undefined);
    const secret = renderBuildSecret(INPUT, POD_JOB, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: INPUT.name, uid: 'uid-1' } });
    assert.deepEqual(
      secret.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
      [['Job', INPUT.name, 'uid-1']],
    );
    const stored = JSON.parse(Buffer.from(secret.data?.['job.json'] ?? '', 'base64').toString('utf8')) as PodJob;
    assert.deepEqual(stored, POD_JOB);
  });

  test("a Job's name is a DNS label within 63 characters, distinct for each claim of a build job", () => {
    const first = buildObjectName(INPUT.buildJobId, 'lease-a');
    assert.match(first, /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])$/);
    assert.notEqual(first, buildObjectName(INPUT.buildJobId, 'lease-b'));
    assert.equal(first, buildObjectName(INPUT.buildJobId, 'lease-a'));
  });
});

describe('pod lines', () => {
  test('log lines, the result, and anything else as an INFO line', () => {
    assert.deepEqual(parsePodLine('{"level":"WARNING","message":"slow"}'), { kind: 'log', level: 'WARNING', message: 'slow' });
    assert.deepEqual(parsePodLine(resultLine({ image: 'i', digest: 'sha256:1', commitSha: 'abc', env: { A: '1' } }).trim()), {
      kind: 'result',
      result: { image: 'i', digest: 'sha256:1', commitSha: 'abc', env: { A: '1' } },
    });
    assert.deepEqual(parsePodLine('STEP 1/5: FROM python'), { kind: 'log', level: 'INFO', message: 'STEP 1/5: FROM python' });
    assert.deepEqual(parsePodLine('{"level":"LOUD","message":"x"}'), { kind: 'log', level: 'INFO', message: '{"level":"LOUD","message":"x"}' });
  });

  test('the redactor removes every credential, longest first', () => {
    const redact = redactor([PUSH_PASSWORD, GIT_PASSWORD, undefined, 'ab']);
    assert.equal(redact(`login ${PUSH_PASSWORD} and ${GIT_PASSWORD}; ab stays`), 'login [redacted] and [redacted]; ab stays');
  });
});

describe('executor settings', () => {
  test('local by default, kubernetes by flag or variable, anything else refused', () => {
    assert.equal(executorOf({}), 'local');
    assert.equal(executorOf({ BERTH_BUILDER_EXECUTOR: 'kubernetes' }), 'kubernetes');
    assert.equal(executorOf({ BERTH_BUILDER_EXECUTOR: 'kubernetes' }, 'local'), 'local');
    assert.throws(() => executorOf({}, 'docker'), KubernetesBuildConfigError);
  });

  test('the namespace and image are required; every problem is named at once', () => {
    assert.throws(
      () =>
        loadKubernetesBuildConfig({
          BERTH_BUILDER_CPU: '-1',
          BERTH_BUILDER_TIMEOUT_SECONDS: '1.5',
          BERTH_BUILDER_ARCHIVE_URL: 'ftp://runner:21',
          BERTH_BUILDER_ARCHIVE_PORT: '70000',
        }),
      (error: Error) =>
        error instanceof KubernetesBuildConfigError &&
        [
          'BERTH_BUILDER_NAMESPACE',
          'BERTH_BUILDER_IMAGE',
          'BERTH_BUILDER_CPU',
          'BERTH_BUILDER_TIMEOUT_SECONDS',
          "BERTH_BUILDER_ARCHIVE_URL must be an http:// or https:// URL (got 'ftp://runner:21')",
          'BERTH_BUILDER_ARCHIVE_PORT',
        ].every((name) => error.message.includes(name)),
    );
    assert.deepEqual(loadKubernetesBuildConfig({ BERTH_BUILDER_NAMESPACE: 'builds', BERTH_BUILDER_IMAGE: 'berth:1', BERTH_BUILDER_CPU: '0.5' }), {
      namespace: 'builds',
      builderImage: 'berth:1',
      serviceAccountName: undefined,
      defaultCpu: 0.5,
      defaultMemoryMb: 4096,
      defaultTimeoutSeconds: 1800,
      ttlSecondsAfterFinished: 600,
      archiveUrl: undefined,
      archivePort: 9470,
    });
    const archives = loadKubernetesBuildConfig({
      BERTH_BUILDER_NAMESPACE: 'builds',
      BERTH_BUILDER_IMAGE: 'berth:1',
      BERTH_BUILDER_ARCHIVE_URL: ' http://10.1.2.3:9470/ ',
      BERTH_BUILDER_ARCHIVE_PORT: '9471',
    });
    assert.deepEqual([archives.archiveUrl, archives.archivePort], ['http://10.1.2.3:9470', 9471]);
  });
});
