import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, type TestContext, test } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import { DriverError } from '../../src/engine/drivers/types.js';
import { RunnerClient } from '../../src/runner/client.js';
import { runJob } from '../../src/runner/job.js';
import { ArchiveServer } from '../../src/runner/kubernetes/archive-server.js';
import type { KubernetesBuildConfig } from '../../src/runner/kubernetes/config.js';
import { kubernetesDriverFor } from '../../src/runner/kubernetes/executor.js';
import { buildInPod, podSource } from '../../src/runner/kubernetes/in-pod.js';
import { buildObjectName, type PodJob } from '../../src/runner/kubernetes/manifests.js';
import { fetchPodArchive } from '../../src/runner/kubernetes/pod-archive.js';
import { logLine, resultLine } from '../../src/runner/kubernetes/pod-lines.js';
import { deadline } from '../support/deadline.js';
import { validateAgainstSchema } from '../support/kube-schemas.js';
import { type KubeObject, KubeStandIn } from '../support/kube-stand-in.js';
import { freePort } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { CONFIG, capturedLogger, claimedJob, FakeControlPlane, NAMESPACE, PUSH_PASSWORD } from './kubernetes-fixtures.js';
import { type ArchiveEntry, gzippedTar } from '../support/archives.js';

/**
 * Uploaded projects (`langgraph deploy --remote`) under the Kubernetes executor: the runner
 * downloads the archive from Berth with its key, and offers it to the build's pod alone from
 * its own address (runner/kubernetes/archive-server.ts); the pod fetches it with the token
 * its Secret carries and unpacks it with Berth's safe extraction.
 */

const RUNNER_KEY = 'berth_runnerKeyNeverInAPod0123456789';
const BERTH_ARCHIVE_TOKEN = 'signed-archive-token-of-berth-abcdef';

const PROJECT: ArchiveEntry[] = [
  { name: 'langgraph.json', body: JSON.stringify({ node_version: '20', graphs: { agent: './agent.ts:graph' } }) },
  { name: 'agent.ts', body: 'export const graph = {};\n' },
];

function tempDir(t: TestContext, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Berth's archive route as the runner meets it: the archive for the runner key and Berth's signed token together, 403 otherwise. */
async function berthArchiveRoute(t: TestContext, archive: Buffer): Promise<{ url: string; asked: () => number }> {
  let asked = 0;
  const server = http.createServer((request, response) => {
    asked++;
    const url = new URL(request.url ?? '/', 'http://berth');
    if (request.headers['x-api-key'] !== RUNNER_KEY || url.searchParams.get('token') !== BERTH_ARCHIVE_TOKEN) {
      response.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'invalid archive URL' }));
      return;
    }
    response.writeHead(200, { 'content-type': 'application/gzip' }).end(archive);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/runner/jobs/${claimedJob().id}/archive?token=${BERTH_ARCHIVE_TOKEN}`, asked: () => asked };
}

interface UploadBuild {
  standIn: KubeStandIn;
  plane: FakeControlPlane;
  name: string;
  archives: string;
  logged: () => string;
  done: Promise<void>;
}

async function startUpload(t: TestContext, archive: Buffer, config: Partial<KubernetesBuildConfig> = {}): Promise<UploadBuild> {
  const standIn = await KubeStandIn.start({ namespaces: [NAMESPACE] });
  t.after(() => standIn.close());
  const berth = await berthArchiveRoute(t, archive);
  const plane = new FakeControlPlane();
  const runnerClient = new RunnerClient(new URL(berth.url).origin, RUNNER_KEY);
  plane.upload = { url: berth.url, download: (url, file, signal) => runnerClient.download(url, file, signal) };
  const port = await freePort();
  const settings: KubernetesBuildConfig = { ...CONFIG, archiveUrl: `http://127.0.0.1:${port}`, archivePort: port, ...config };
  const { logger, text } = capturedLogger();
  const stop = new AbortController();
  t.after(() => stop.abort());
  const job = claimedJob();
  const archives = path.join(tempDir(t, 'berth-k8s-upload-'), 'archives');
  const driverFor = kubernetesDriverFor(settings, standIn.kubeConfig(NAMESPACE), { pollMs: 20, logGraceMs: 200, archiveHost: '127.0.0.1' });
  const done = runJob(plane.client(), job, driverFor, logger, stop.signal, { archives, spool: path.join(path.dirname(archives), 'spool') }).then(
    () => undefined,
  );
  return { standIn, plane, name: buildObjectName(job.id, job.lease_token), archives, logged: text, done };
}

function created(build: UploadBuild, kind: 'Job' | 'Secret'): Promise<KubeObject> {
  return eventually(async () => build.standIn.object(kind, NAMESPACE, build.name), `the build's ${kind}`);
}

function podJobOf(secret: KubeObject): PodJob {
  return JSON.parse(Buffer.from((secret.data as Record<string, string>)['job.json'] ?? '', 'base64').toString('utf8')) as PodJob;
}

/** Plays the kubelet: the pod's output becomes its log in the stand-in, and the Job ends as the pod's exit code says. */
function finish(build: UploadBuild, pod: string, lines: string[], succeeded: boolean): void {
  build.standIn.writeLog(NAMESPACE, pod, lines);
  build.standIn.edit('Pod', NAMESPACE, pod, (object) => {
    object.status = { phase: succeeded ? 'Succeeded' : 'Failed' };
  });
  build.standIn.endLog(NAMESPACE, pod);
  build.standIn.setStatus('Job', NAMESPACE, build.name, {
    ...(succeeded ? { succeeded: 1 } : { failed: 1 }),
    conditions: [{ type: succeeded ? 'Complete' : 'Failed', status: 'True', ...(succeeded ? {} : { reason: 'BackoffLimitExceeded', message: 'failed' }) }],
  });
}

const IMAGE_RESULT = { image: claimedJob().image, digest: 'sha256:0123', commitSha: null };

describe('uploaded projects built as Kubernetes Jobs (against the API-server stand-in)', () => {
  test('the pod gets the archive from the runner, with no key or long-lived token in any manifest, and the build is reported', async (t) => {
    const archive = await gzippedTar(PROJECT);
    const build = await startUpload(t, archive);
    const job = await created(build, 'Job');
    const secret = await created(build, 'Secret');
    validateAgainstSchema(job as unknown as KubernetesObject);
    validateAgainstSchema(secret as unknown as KubernetesObject);
    const podJob = podJobOf(secret);
    assert.equal(podJob.source.kind, 'archive');
    assert.ok(podJob.source.kind === 'archive' && podJob.source.url.startsWith('http://127.0.0.1:'));
    assert.equal(podJob.source.kind === 'archive' && podJob.source.sha256, createHash('sha256').update(archive).digest('hex'));
    // Every manifest the runner sent: neither its key nor Berth's signed archive URL; the pod's own token only in the Secret.
    const manifests = JSON.stringify([job, secret, podJob]);
    for (const secretValue of [RUNNER_KEY, BERTH_ARCHIVE_TOKEN]) assert.ok(!manifests.includes(secretValue), 'a runner credential reached a manifest');
    const offerToken = podJob.source.kind === 'archive' ? (podJob.source.url.split('/').pop() ?? '') : '';
    assert.ok(!JSON.stringify(job).includes(offerToken), "the pod's archive token is in the pod spec");

    // The pod: its source is the archive, byte for byte, fetched from the runner with the Secret's URL.
    const pod = build.standIn.addPod('Job', NAMESPACE, build.name, { phase: 'Running' });
    const workDir = tempDir(t, 'berth-k8s-pod-');
    const podLines: string[] = [];
    const source = await podSource(
      podJob.source,
      workDir,
      AbortSignal.timeout(deadline(60_000)),
      async (level, message) => void podLines.push(logLine(level, message).trim()),
    );
    assert.equal(source.kind, 'archive');
    assert.ok(source.kind === 'archive' && fs.readFileSync(source.path).equals(archive));
    await eventually(async () => build.standIn.logFollowers(NAMESPACE, pod) > 0, 'the runner following the log');
    finish(build, pod, [...podLines, logLine('INFO', `pushing with ${PUSH_PASSWORD}`).trim(), resultLine(IMAGE_RESULT).trim()], true);
    await build.done;

    assert.deepEqual(
      build.plane.results.map(({ status, image }) => [status, image]),
      [['succeeded', IMAGE_RESULT.image]],
    );
    assert.ok(build.plane.lines.includes('INFO Fetching the uploaded project from the build runner'));
    assert.ok(build.plane.lines.includes('INFO pushing with [redacted]'));
    const everything = [build.logged(), ...build.plane.lines].join('\n');
    for (const secretValue of [RUNNER_KEY, BERTH_ARCHIVE_TOKEN, offerToken, PUSH_PASSWORD])
      assert.ok(!everything.includes(secretValue), 'a credential reached a log');
    // Over: the Job and Secret are gone, the offer with them (the runner no longer listens), and the downloaded archive is removed.
    assert.equal(build.standIn.object('Job', NAMESPACE, build.name), undefined);
    assert.equal(build.standIn.object('Secret', NAMESPACE, build.name), undefined);
    await assert.rejects(
      fetchPodArchive(podJob.source as { url: string; sha256: string }, path.join(workDir, 'again.tar.gz'), AbortSignal.timeout(deadline(60_000))),
      DriverError,
    );
    assert.deepEqual(fs.readdirSync(build.archives), []);
  });

  test('a hostile archive is refused by the safe unpacking in the pod, and the build fails saying so', async (t) => {
    const archive = await gzippedTar([...PROJECT, { name: 'escape', type: 'symlink', linkname: '../../../etc' }, { name: 'escape/passwd', body: 'root::0:0' }]);
    const build = await startUpload(t, archive);
    const secret = await created(build, 'Secret');
    const pod = build.standIn.addPod('Job', NAMESPACE, build.name, { phase: 'Running' });
    // The pod's own program (berth builder-pod) with the Secret's file, as the Job mounts it.
    const podDir = tempDir(t, 'berth-k8s-pod-');
    const jobFile = path.join(podDir, 'job.json');
    fs.writeFileSync(jobFile, JSON.stringify(podJobOf(secret)), { mode: 0o400 });
    const out = new PassThrough();
    const printed: string[] = [];
    out.on('data', (chunk: Buffer) => printed.push(...String(chunk).split('\n').filter(Boolean)));
    const exitCode = await buildInPod(jobFile, path.join(podDir, 'work'), out, AbortSignal.timeout(deadline(120_000)));
    assert.equal(exitCode, 1);
    finish(build, pod, printed, false);
    await build.done;
    assert.equal(build.plane.results[0]?.status, 'failed');
    assert.match(build.plane.results[0]?.message ?? '', /^archive entry 'escape' is a symbolic link to '..\/..\/..\/etc', outside the project directory$/);
    assert.ok(build.plane.lines.includes('INFO Unpacking the uploaded project'));
    assert.ok(!fs.existsSync(path.join(podDir, 'etc')));
  });

  test('a runner without BERTH_BUILDER_ARCHIVE_URL fails an upload saying what to set, and creates nothing', async (t) => {
    const build = await startUpload(t, await gzippedTar(PROJECT), { archiveUrl: undefined });
    await build.done;
    assert.match(build.plane.results[0]?.message ?? '', /set BERTH_BUILDER_ARCHIVE_URL/);
    assert.equal(build.standIn.requests.filter((r) => r.method === 'PATCH').length, 0);
  });
});

describe("the runner's archive offers (hostile pods)", () => {
  test("each offer's token gets its own archive only, a guessed token nothing, a revoked one nothing, and changed bytes are refused", async (t) => {
    const dir = tempDir(t, 'berth-offers-');
    const port = await freePort();
    const server = new ArchiveServer(`http://127.0.0.1:${port}`, port, '127.0.0.1');
    const ours = path.join(dir, 'ours.tar.gz');
    const theirs = path.join(dir, 'theirs.tar.gz');
    fs.writeFileSync(ours, await gzippedTar(PROJECT));
    fs.writeFileSync(theirs, await gzippedTar([{ name: 'langgraph.json', body: '{"graphs": {"secret": "./other-workspace.py:g"}}' }]));
    const mine = await server.offer(ours);
    const other = await server.offer(theirs);
    t.after(() => Promise.all([mine.revoke(), other.revoke()]));
    const fetched = path.join(dir, 'fetched');
    fs.mkdirSync(fetched);
    const signal = AbortSignal.timeout(deadline(60_000));
    await fetchPodArchive(mine, path.join(fetched, 'a'), signal);
    assert.ok(fs.readFileSync(path.join(fetched, 'a')).equals(fs.readFileSync(ours)));
    // Another build's pod with its own token, aiming at this build's archive: the digest it has is ours, the bytes it gets are its own.
    await assert.rejects(fetchPodArchive({ url: other.url, sha256: mine.sha256 }, path.join(fetched, 'b'), signal), /SHA-256 differs/);
    const guessed = `http://127.0.0.1:${port}/archives/${'A'.repeat(43)}`;
    await assert.rejects(
      fetchPodArchive({ url: guessed, sha256: mine.sha256 }, path.join(fetched, 'c'), signal),
      /did not hand over the uploaded archive \(404\)/,
    );
    const answer = await fetch(`http://127.0.0.1:${port}/archives/../ours.tar.gz`);
    assert.equal(answer.status, 404);
    await mine.revoke();
    await assert.rejects(fetchPodArchive(mine, path.join(fetched, 'd'), signal), /\(404\)/);
    await fetchPodArchive(other, path.join(fetched, 'e'), signal);
    await other.revoke();
    await assert.rejects(fetchPodArchive(other, path.join(fetched, 'f'), signal), /could not reach its build runner/);
    for (const leftover of ['b', 'c', 'd', 'f']) assert.equal(fs.existsSync(path.join(fetched, leftover)), false);
  });
});
