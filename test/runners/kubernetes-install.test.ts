import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { KubernetesObject, V1PolicyRule } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { runJob } from '../../src/runner/job.js';
import { kubernetesDriverFor } from '../../src/runner/kubernetes/executor.js';
import { buildObjectName } from '../../src/runner/kubernetes/manifests.js';
import { logLine, resultLine } from '../../src/runner/kubernetes/pod-lines.js';
import { deadline } from '../support/deadline.js';
import { validateAgainstSchema } from '../support/kube-schemas.js';
import { KubeStandIn } from '../support/kube-stand-in.js';
import { eventually } from '../support/runtimes.js';
import { CONFIG, capturedLogger, claimedJob, FakeControlPlane, NAMESPACE } from './kubernetes-fixtures.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** `group/resource:verb` for every request the executor made while it built, earlier claims included, and cleaned up. */
async function permissionsUsed(): Promise<string[]> {
  const standIn = await KubeStandIn.start({ namespaces: [NAMESPACE] });
  try {
    const job = claimedJob();
    const name = buildObjectName(job.id, job.lease_token);
    const plane = new FakeControlPlane();
    const done = runJob(
      plane.client(),
      job,
      kubernetesDriverFor(CONFIG, standIn.kubeConfig(NAMESPACE), { pollMs: 20, logGraceMs: 100 }),
      capturedLogger().logger,
      new AbortController().signal,
      { archives: '/nonexistent/archives', spool: '/nonexistent/spool' },
    );
    await eventually(async () => standIn.object('Secret', NAMESPACE, name), 'the Secret');
    const pod = standIn.addPod('Job', NAMESPACE, name, { phase: 'Running' });
    standIn.writeLog(NAMESPACE, pod, [logLine('INFO', 'building'), resultLine({ image: job.image, commitSha: null }).trim()]);
    standIn.endLog(NAMESPACE, pod);
    standIn.setStatus('Job', NAMESPACE, name, { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] });
    await done;
    assert.equal(plane.results[0]?.status, 'succeeded');
    const used = new Set<string>();
    for (const request of standIn.requests) {
      const match = request.path.match(/^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)\/namespaces\/[^/]+\/([^/]+)(?:\/([^/]+))?(\/log)?$/);
      if (!match) continue;
      const [, group = '', resource, name, log] = match;
      if (log) used.add(`/${resource}/log:get`);
      else if (request.method === 'PATCH') used.add(`${group}/${resource}:patch`).add(`${group}/${resource}:create`);
      else if (request.method === 'DELETE') used.add(`${group}/${resource}:delete`);
      else used.add(`${group}/${resource}:${name ? 'get' : 'list'}`);
    }
    return [...used].sort();
  } finally {
    await standIn.close();
  }
}

function granted(rules: V1PolicyRule[]): string[] {
  return rules
    .flatMap((rule) =>
      (rule.apiGroups ?? []).flatMap((group) => (rule.resources ?? []).flatMap((resource) => rule.verbs.map((verb) => `${group}/${resource}:${verb}`))),
    )
    .sort();
}

test('deploy/builder-kubernetes matches the Kubernetes schemas, and its Role grants exactly what the executor uses', async (t) => {
  try {
    await run('kubectl', ['version', '--client'], { signal: AbortSignal.timeout(deadline(30_000)) });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return t.skip('kubectl is not installed (apt-get install kubectl)');
  }
  const { stdout } = await run('kubectl', ['kustomize', path.join(ROOT, 'deploy/builder-kubernetes')], {
    signal: AbortSignal.timeout(deadline(60_000)),
    killSignal: 'SIGKILL',
  });
  const objects = yaml.loadAll(stdout) as KubernetesObject[];
  for (const object of objects) validateAgainstSchema(object);
  const role = objects.find((o) => o.kind === 'Role') as KubernetesObject & { rules: V1PolicyRule[] };
  assert.deepEqual(granted(role.rules), await permissionsUsed());
  const binding = objects.find((o) => o.kind === 'RoleBinding') as KubernetesObject & { subjects: { name: string }[]; roleRef: { name: string } };
  assert.equal(binding.roleRef.name, role.metadata?.name);
  const deployment = objects.find((o) => o.kind === 'Deployment') as KubernetesObject & { spec: { template: { spec: { serviceAccountName: string } } } };
  assert.equal(deployment.spec.template.spec.serviceAccountName, binding.subjects[0]?.name);
});
