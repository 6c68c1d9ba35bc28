import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { containersEnv, run } from '../build/helpers.js';
import { createRepository, type FixtureRepository, tempDir, type TempDir } from '../support/git-repos.js';
import { startCutProxy } from '../support/cut-proxy.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { type Client, client } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { freePort } from '../support/process.js';
import type { TokenRegistry } from '../support/registry.js';
import { eventually } from '../support/runtimes.js';
import { deadline } from '../support/deadline.js';
import { type DatabaseKind, postgresUnavailable, type TestServer } from '../support/server.js';
import { startRunnerControlPlane } from '../support/runner-plane.js';
import { nodeArguments } from '../support/entry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BASE = 'localhost/berth-test/runner-base:1';
const GIT_PASSWORD = `git-${randomBytes(12).toString('hex')}`;

interface RunnerProcess {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

/**
 * Issue 25, first slice: builds off the control plane. A real control plane with
 * BERTH_BUILDER=runners and no builder of its own, `berth builder` processes (the real
 * runner with a quick build: test/support/runner-process.ts) with separate data
 * directories, a git http-backend repository behind a password, and Debian's docker-registry
 * trusting Berth's tokens.
 */
describe('build runners', () => {
  holdMachineTurnForSuite({ before, after });
  before(async () => {
    if ((await run('podman', ['image', 'exists', BASE])).code === 0) return;
    const container = (await run('buildah', ['from', 'scratch'])).stdout.trim();
    assert.ok(container, 'buildah from scratch');
    try {
      assert.equal((await run('buildah', ['copy', container, '/bin/busybox', '/busybox'])).code, 0);
      assert.equal((await run('buildah', ['commit', '--quiet', container, BASE])).code, 0);
    } finally {
      await run('buildah', ['rm', container]);
    }
  });
  after(async () => {
    await run('podman', ['rmi', BASE]);
  });

  test('berth builder refuses to start without its settings, naming them and never the key', () => {
    const key = `berth_${randomBytes(16).toString('hex')}`;
    const result = spawnSync(process.execPath, [...nodeArguments('src/main.ts'), 'builder'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', BERTH_RUNNER_KEY: key, BERTH_RUNNER_CONCURRENCY: 'lots' },
      encoding: 'utf8',
    });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /BERTH_URL is required/);
    assert.match(result.stderr, /BERTH_RUNNER_CONCURRENCY/);
    assert.ok(!result.stderr.includes(key) && !result.stdout.includes(key));
  });

  for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
    describe(`[${kind}]`, async () => {
      const skip = kind === 'postgres' ? await postgresUnavailable() : null;
      if (skip) {
        process.stdout.write(`# SKIP build runners [postgres]: ${skip}\n`);
        return;
      }
      let server: TestServer;
      let registry: TokenRegistry;
      let api: Client;
      let repos: TempDir;
      let repo: FixtureRepository;
      let http: GitHttpServer;
      let headSha = '';
      let integrationId = '';
      let repoUrl = '';
      let runnerKey = '';
      let otherRunnerKey = '';
      const runners: RunnerProcess[] = [];
      const dataDirs: string[] = [];

      before(async () => {
        ({ server, registry } = await startRunnerControlPlane(kind, { leaseSeconds: 3, waitSeconds: 8 }));
        api = client(server.url, { key: server.adminKey });
        repos = await tempDir('berth-runner-repos-');
        repo = await createRepository(repos.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
        headSha = await repo.commit('main', { 'langgraph.json': '{"graphs":{}}' }, 'project');
        http = await startGitHttpServer({ root: repos.path, auth: { username: 'git', password: GIT_PASSWORD } });
        const integration = await api('POST', '/v1/integrations/codehost', {
          body: { provider: 'git', name: 'company git', git: { repositories: [`${http.url}/acme/agent.git`], username: 'git', password: GIT_PASSWORD } },
        });
        assert.equal(integration.status, 201, integration.text);
        integrationId = integration.body.id;
        const [listed] = (await api('GET', `/v1/integrations/codehost/${integrationId}/repos`)).body as { url: string }[];
        assert.ok(listed);
        repoUrl = listed.url;
        const key = async (name: string) => {
          const made = await api('POST', '/v1/api-keys', { body: { name, role: 'runner', labels: ['linux', 'x86'] } });
          assert.equal(made.status, 201, made.text);
          assert.equal(made.body.role, 'runner');
          assert.deepEqual(made.body.labels, ['linux', 'x86']);
          return made.body.key as string;
        };
        runnerKey = await key('runner-one');
        otherRunnerKey = await key('runner-two');
      });

      after(async () => {
        for (const runner of runners) if (runner.child.exitCode === null) runner.child.kill('SIGKILL');
        await Promise.all(runners.map((runner) => runner.exited));
        await server?.close();
        await registry?.stop();
        await http?.close();
        await repos?.remove();
        for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
      });

      function startRunner(
        options: { hold?: boolean; key?: string; healthPort?: number; url?: string; dataDir?: string; env?: Record<string, string> } = {},
      ): RunnerProcess {
        const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'berth-runner-'));
        dataDirs.push(dataDir);
        const child = spawn(process.execPath, [...nodeArguments('test/support/runner-process.ts')], {
          cwd: ROOT,
          env: {
            ...containersEnv(),
            BERTH_URL: options.url ?? server.url,
            BERTH_RUNNER_KEY: options.key ?? runnerKey,
            BERTH_RUNNER_DATA_DIR: dataDir,
            BERTH_RUNNER_LABELS: 'linux',
            BERTH_RUNNER_POLL_SECONDS: '5',
            BERTH_RUNNER_HEALTH_PORT: String(options.healthPort ?? 0),
            RUNNER_TEST_BASE: BASE,
            RUNNER_TEST_HOLD: options.hold ? '1' : '0',
            LOG_LEVEL: 'debug',
            ...options.env,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const output: string[] = [];
        child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
        child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
        const started = { child, output, exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) };
        runners.push(started);
        return started;
      }

      /** A runner asks for work from its first moment; its process takes a while to start on a busy machine (BERTH_RUNNER_WAIT_SECONDS is short here). */
      async function started(runner: RunnerProcess): Promise<void> {
        await eventually(async () => runner.output.join('').includes('berth builder is running'), 'the runner started', 60_000);
      }

      async function newDeployment(name: string, sourceConfig: Record<string, unknown> = {}): Promise<{ id: string; revisionId: string }> {
        const created = await api('POST', '/v2/deployments', {
          body: {
            name,
            source: 'codehost',
            source_config: { integration_id: integrationId, repo_url: repoUrl, ...sourceConfig },
            source_revision_config: { repo_ref: 'main' },
            secrets: [],
          },
        });
        assert.equal(created.status, 201, created.text);
        return { id: created.body.id, revisionId: created.body.latest_revision_id };
      }

      /** An `internal_source` deployment whose revision builds the project uploaded as `langgraph deploy --remote` does. */
      async function uploadedDeployment(name: string): Promise<{ id: string; revisionId: string; archive: Buffer }> {
        const created = await api('POST', '/v2/deployments', {
          body: { name, source: 'internal_source', source_config: { deployment_type: 'dev' }, source_revision_config: {}, secrets: [] },
        });
        assert.equal(created.status, 201, created.text);
        const project = await tempDir('berth-runner-upload-');
        try {
          fs.mkdirSync(path.join(project.path, 'agent'));
          fs.writeFileSync(path.join(project.path, 'agent', 'langgraph.json'), '{"graphs":{}}');
          const file = path.join(project.path, 'project.tar.gz');
          assert.equal((await run('tar', ['-czf', file, '-C', path.join(project.path, 'agent'), '.'])).code, 0);
          const archive = fs.readFileSync(file);
          const url = await api('POST', `/v2/deployments/${created.body.id}/upload-url`);
          assert.equal(url.status, 200, url.text);
          const put = await fetch(url.body.upload_url, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: archive });
          assert.equal(put.status, 200, await put.text());
          const patched = await api('PATCH', `/v2/deployments/${created.body.id}`, {
            body: { source_revision_config: { source_tarball_path: url.body.object_path } },
          });
          assert.equal(patched.status, 200, patched.text);
          return { id: created.body.id, revisionId: patched.body.latest_revision_id, archive };
        } finally {
          await project.remove();
        }
      }

      async function terminal(deploymentId: string, revisionId: string) {
        const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=60`);
        assert.equal(res.status, 200, res.text);
        return res.body as { status: string; status_message: string | null; image_ref?: string | null };
      }

      async function buildLog(deploymentId: string, revisionId: string): Promise<string[]> {
        const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`);
        assert.equal(res.status, 200, res.text);
        return (res.body.logs as { message: string }[]).map((line) => line.message);
      }

      const runnerApi = (key: string) => client(server.url, { key });

      test('with no runner online, the build waits saying so and fails after BERTH_RUNNER_WAIT_SECONDS', { timeout: deadline(60_000) }, async () => {
        const { id, revisionId } = await newDeployment(`no-runner-${kind}`);
        await eventually(async () => (await buildLog(id, revisionId)).some((line) => /none is online/.test(line)), 'the waiting line');
        const waiting = await api('GET', `/v2/deployments/${id}/revisions/${revisionId}`);
        assert.equal(waiting.body.status, 'BUILDING');
        assert.match(
          waiting.body.status_message ?? '',
          /^Waiting for a build runner: none is online for this organization; the build fails if none takes it by /,
        );
        const revision = await terminal(id, revisionId);
        assert.equal(revision.status, 'BUILD_FAILED');
        assert.match(revision.status_message ?? '', /BERTH_RUNNER_WAIT_SECONDS/);
      });

      test('runner keys reach only the runner routes; other keys do not reach them', async () => {
        const runner = runnerApi(runnerKey);
        for (const [method, url] of [
          ['GET', '/v2/deployments'],
          ['GET', '/v1/api-keys'],
          ['GET', '/v2/listeners'],
        ] as const) {
          const res = await runner(method, url);
          assert.deepEqual([res.status, res.body.code], [403, 'role_forbids'], `${method} ${url}: ${res.text}`);
        }
        const byAdmin = await api('POST', '/v1/runner/jobs/claim', { body: {} });
        assert.deepEqual([byAdmin.status, byAdmin.body.code], [403, 'role_forbids']);
        const foreignLabel = await runner('POST', '/v1/runner/jobs/claim', { body: { labels: ['gpu'] } });
        assert.deepEqual([foreignLabel.status, foreignLabel.body.code], [403, 'role_forbids'], 'a label its key does not carry');
        const bound = await api('POST', '/v1/api-keys', { body: { role: 'runner', workspace_id: server.workspaceId } });
        assert.equal(bound.status, 422, 'a runner key serves the organization');
        const labelled = await api('POST', '/v1/api-keys', { body: { role: 'member', labels: ['linux'] } });
        assert.equal(labelled.status, 422, 'only runner keys carry labels');
      });

      test(
        'a runner cannot report on a job it does not hold; log batches are stored once; a failure reaches the revision',
        { timeout: deadline(60_000) },
        async () => {
          const one = runnerApi(runnerKey);
          const two = runnerApi(otherRunnerKey);
          const { id, revisionId } = await newDeployment(`fenced-${kind}`);
          // A runner of another organization: never given the job, and nothing of it answers.
          const foreign = await server.berth.services.tenancy.createOrganization(`runners-other-${kind}-${Date.now()}`);
          assert.ok(foreign);
          const foreignKey = await client(server.url, { key: foreign.apiKey })('POST', '/v1/api-keys', { body: { role: 'runner' } });
          assert.equal(foreignKey.status, 201, foreignKey.text);
          const hostile = runnerApi(foreignKey.body.key);
          // The job is queued once the engine says it waits for a runner.
          await eventually(async () => (await buildLog(id, revisionId)).some((line) => /none is online/.test(line)), 'the job queued');
          assert.deepEqual((await hostile('POST', '/v1/runner/jobs/claim', { body: { wait: 2 } })).body, { job: null }, 'another organization’s runner');
          const claimed = await one('POST', '/v1/runner/jobs/claim', { body: { wait: 20 } });
          assert.equal(claimed.status, 200, claimed.text);
          const job = claimed.body.job;
          assert.ok(job, 'the job was claimed');
          assert.equal(job.revision_id, revisionId);
          assert.match(job.image, new RegExp(`^${registry.host.replace(/\./g, '\\.')}/.+:${revisionId}$`));
          assert.equal(job.push.repository, job.image.slice(registry.host.length + 1).replace(/:.*$/, ''));
          const jobUrl = `/v1/runner/jobs/${job.id}`;

          const source = await one('GET', `${jobUrl}/source?lease_token=${job.lease_token}`);
          assert.equal(source.status, 200, source.text);
          assert.deepEqual([source.body.url, source.body.ref, source.body.credentials.username], [repoUrl, 'main', 'git']);

          // Another runner, with the holder's token or without: refused, and nothing moves.
          for (const [method, suffix, body] of [
            ['POST', '/heartbeat', { lease_token: job.lease_token }],
            ['POST', '/logs', { lease_token: job.lease_token, seq: 0, lines: [{ level: 'INFO', message: 'forged' }] }],
            ['POST', '/result', { lease_token: job.lease_token, status: 'failed', message: 'forged' }],
          ] as const) {
            const res = await two(method, `${jobUrl}${suffix}`, { body });
            assert.deepEqual([res.status, res.body.code], [409, 'build_lease_lost'], `${suffix}: ${res.text}`);
          }
          for (const [method, suffix, body] of [
            ['POST', '/heartbeat', { lease_token: job.lease_token }],
            ['GET', `/source?lease_token=${job.lease_token}`, undefined],
            ['POST', '/result', { lease_token: job.lease_token, status: 'failed', message: 'forged' }],
          ] as const) {
            const res = await hostile(method, `${jobUrl}${suffix}`, body ? { body } : {});
            assert.deepEqual([res.status, res.body.code], [404, 'build_job_not_found'], `another organization, ${suffix}: ${res.text}`);
            assert.ok(!res.text.includes(GIT_PASSWORD));
          }
          const stolenSource = await two('GET', `${jobUrl}/source?lease_token=${job.lease_token}`);
          assert.equal(stolenSource.status, 409);
          assert.ok(!stolenSource.text.includes(GIT_PASSWORD));
          const wrongToken = await one('POST', `${jobUrl}/heartbeat`, { body: { lease_token: 'not-the-token' } });
          assert.equal(wrongToken.status, 409);

          const batch = { lease_token: job.lease_token, seq: 0, lines: [{ level: 'INFO', message: 'step one of the build' }] };
          assert.deepEqual((await one('POST', `${jobUrl}/logs`, { body: batch })).body, { stored: true });
          assert.deepEqual((await one('POST', `${jobUrl}/logs`, { body: batch })).body, { stored: false }, 'the batch sent again');
          const beat = await one('POST', `${jobUrl}/heartbeat`, { body: { lease_token: job.lease_token } });
          assert.equal(beat.body.action, 'continue');
          const failed = await one('POST', `${jobUrl}/result`, { body: { lease_token: job.lease_token, status: 'failed', message: 'the compiler broke' } });
          assert.deepEqual(failed.body, { outcome: 'applied' });
          const again = await one('POST', `${jobUrl}/result`, { body: { lease_token: job.lease_token, status: 'failed', message: 'the compiler broke' } });
          assert.deepEqual(again.body, { outcome: 'unchanged' });

          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'BUILD_FAILED');
          assert.match(revision.status_message ?? '', /the compiler broke/);
          const lines = await buildLog(id, revisionId);
          assert.equal(lines.filter((line) => line === 'step one of the build').length, 1, lines.join('\n'));
          assert.ok(!lines.includes('forged'));
        },
      );

      test('a repository that needs no credentials is handed over with credentials null', { timeout: deadline(60_000) }, async () => {
        const open = await startGitHttpServer({ root: repos.path });
        try {
          const integration = await api('POST', '/v1/integrations/codehost', {
            body: { provider: 'git', name: `open git ${kind}`, git: { repositories: [`${open.url}/acme/agent.git`] } },
          });
          assert.equal(integration.status, 201, integration.text);
          const [listed] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];
          assert.ok(listed);
          const created = await api('POST', '/v2/deployments', {
            body: {
              name: `open-${kind}`,
              source: 'codehost',
              source_config: { integration_id: integration.body.id, repo_url: listed.url },
              source_revision_config: { repo_ref: 'main' },
              secrets: [],
            },
          });
          assert.equal(created.status, 201, created.text);
          const [id, revisionId] = [created.body.id as string, created.body.latest_revision_id as string];
          const one = runnerApi(runnerKey);
          // A claim waits for the job to be queued (other tests' runners may have been seen lately, so no "none is online" line).
          const job = await eventually(async () => (await one('POST', '/v1/runner/jobs/claim', { body: { wait: 5 } })).body.job, 'the job claimed');
          assert.equal(job?.revision_id, revisionId);
          const source = await one('GET', `/v1/runner/jobs/${job.id}/source?lease_token=${job.lease_token}`);
          assert.equal(source.status, 200, source.text);
          assert.deepEqual(source.body, { kind: 'git', url: listed.url, ref: 'main', credentials: null });
          const failed = await one('POST', `/v1/runner/jobs/${job.id}/result`, {
            body: { lease_token: job.lease_token, status: 'failed', message: 'not built here' },
          });
          assert.deepEqual(failed.body, { outcome: 'applied' });
          assert.equal((await terminal(id, revisionId)).status, 'BUILD_FAILED');
        } finally {
          await open.close();
        }
      });

      test(
        'placement: a job goes only to a runner advertising every label its workspace and its listener require',
        { timeout: deadline(60_000) },
        async (t) => {
          const one = runnerApi(runnerKey);
          const workspaceLabels = `/v1/workspaces/${server.workspaceId}/runner-labels`;
          t.after(() => api('PUT', workspaceLabels, { body: { labels: [] } }));
          const set = await api('PUT', workspaceLabels, { body: { labels: ['linux'] } });
          assert.deepEqual([set.status, set.body], [200, { labels: ['linux'] }], set.text);
          assert.deepEqual((await api('GET', workspaceLabels)).body, { labels: ['linux'] });
          const listener = await api('POST', '/v2/listeners', {
            body: { compute_type: 'k8s', compute_id: `labelled-${kind}`, compute_config: { k8s_namespaces: ['builds'] } },
          });
          assert.equal(listener.status, 201, listener.text);
          const listenerLabels = `/v2/listeners/${listener.body.id}/runner-labels`;
          const onListener = await api('PUT', listenerLabels, { body: { labels: ['x86', 'linux'] } });
          assert.deepEqual([onListener.status, onListener.body], [200, { labels: ['linux', 'x86'] }], onListener.text);

          // Who may not set them: a member (a workspace's labels are an administrator's), a runner, another organization.
          const member = await api('POST', '/v1/api-keys', { body: { name: 'member', role: 'member', workspace_id: server.workspaceId } });
          const foreign = await server.berth.services.tenancy.createOrganization(`labels-other-${kind}-${Date.now()}`);
          assert.ok(foreign);
          for (const [who, key, path, expected] of [
            ['a member', member.body.key as string, workspaceLabels, 403],
            ['a runner key', runnerKey, workspaceLabels, 403],
            ['a runner key', runnerKey, listenerLabels, 403],
            ['an admin of another organization', foreign.apiKey, workspaceLabels, 404],
            ['an admin of another organization', foreign.apiKey, listenerLabels, 404],
          ] as const) {
            const res = await client(server.url, { key })('PUT', path, { body: { labels: [] } });
            assert.equal(res.status, expected, `${who} on ${path}: ${res.text}`);
          }
          assert.deepEqual((await api('GET', workspaceLabels)).body, { labels: ['linux'] }, 'unchanged');
          assert.deepEqual((await api('GET', listenerLabels)).body, { labels: ['linux', 'x86'] }, 'unchanged');

          const created = await api('POST', '/v2/deployments', {
            body: {
              name: `placed-${kind}`,
              source: 'codehost',
              source_config: { integration_id: integrationId, repo_url: repoUrl, listener_id: listener.body.id },
              source_revision_config: { repo_ref: 'main' },
              secrets: [],
            },
          });
          assert.equal(created.status, 201, created.text);
          const queued = () =>
            server.berth.db.selectFrom('build_jobs').select('required_labels').where('revision_id', '=', created.body.latest_revision_id).executeTakeFirst();
          await eventually(async () => (await queued()) !== undefined, 'the job queued');
          assert.deepEqual(JSON.parse((await queued())?.required_labels ?? ''), ['linux', 'x86'], 'the workspace’s labels and the listener’s');
          for (const labels of [['linux'], ['x86']]) {
            assert.deepEqual(
              (await one('POST', '/v1/runner/jobs/claim', { body: { labels, wait: 1 } })).body,
              { job: null },
              `a runner with ${labels.join()} only`,
            );
          }
          const claimed = await one('POST', '/v1/runner/jobs/claim', { body: { labels: ['linux', 'x86'], wait: 10 } });
          assert.equal(claimed.body.job?.revision_id, created.body.latest_revision_id, claimed.text);
          const job = claimed.body.job;
          await one('POST', `/v1/runner/jobs/${job.id}/result`, { body: { lease_token: job.lease_token, status: 'failed', message: 'placed' } });
          assert.equal((await terminal(created.body.id, created.body.latest_revision_id)).status, 'BUILD_FAILED');
        },
      );

      test('an uploaded archive is handed to the holder of the claim only, through a short-lived signed URL', { timeout: deadline(60_000) }, async () => {
        const one = runnerApi(runnerKey);
        const { id, revisionId, archive } = await uploadedDeployment(`archive-url-${kind}`);
        const claimed = await one('POST', '/v1/runner/jobs/claim', { body: { wait: 30 } });
        assert.equal(claimed.status, 200, claimed.text);
        const job = claimed.body.job;
        assert.equal(job?.revision_id, revisionId);
        const source = await one('GET', `/v1/runner/jobs/${job.id}/source?lease_token=${job.lease_token}`);
        assert.equal(source.status, 200, source.text);
        assert.equal(source.body.kind, 'archive');
        assert.ok(Date.parse(source.body.expires_at) - Date.now() <= 600_000, 'the URL is short-lived');
        const url = new URL(source.body.url as string);
        const at = `${url.pathname}${url.search}`;
        const download = await fetch(url, { headers: { 'X-Api-Key': runnerKey } });
        assert.equal(download.status, 200);
        assert.equal(download.headers.get('content-type'), 'application/gzip');
        assert.ok(Buffer.from(await download.arrayBuffer()).equals(archive), 'the archive as uploaded');

        const foreign = await server.berth.services.tenancy.createOrganization(`archive-other-${kind}-${Date.now()}`);
        assert.ok(foreign);
        const foreignKey = await client(server.url, { key: foreign.apiKey })('POST', '/v1/api-keys', { body: { role: 'runner' } });
        const otherJob = `/v1/runner/jobs/${randomUUID()}/archive${url.search}`;
        const tampered = `${url.pathname}?token=${encodeURIComponent(`${url.searchParams.get('token') ?? ''}x`)}`;
        for (const [who, key, target, expected] of [
          ['another runner of the organization', otherRunnerKey, at, [409, 'build_lease_lost']],
          ['a runner of another organization', foreignKey.body.key as string, at, [404, 'build_job_not_found']],
          ['an admin key', server.adminKey, at, [403, 'role_forbids']],
          ['the holder, for another job', runnerKey, otherJob, [403, 'build_archive_url_invalid']],
          ['the holder, with a forged token', runnerKey, tampered, [403, 'build_archive_url_invalid']],
        ] as const) {
          const res = await client(server.url, { key })('GET', target);
          assert.deepEqual([res.status, res.body.code], expected, `${who}: ${res.text}`);
        }
        assert.equal((await fetch(url)).status, 401, 'no key');

        const failed = await one('POST', `/v1/runner/jobs/${job.id}/result`, {
          body: { lease_token: job.lease_token, status: 'failed', message: 'refused on purpose' },
        });
        assert.deepEqual(failed.body, { outcome: 'applied' });
        const over = await one('GET', at);
        assert.deepEqual([over.status, over.body.code], [409, 'build_lease_lost'], 'the URL dies with the claim');
        assert.equal((await terminal(id, revisionId)).status, 'BUILD_FAILED');
      });

      test(
        'an upload revision is built by a runner process from the archive it downloaded, and reaches DEPLOYED',
        { timeout: deadline(120_000) },
        async (t) => {
          const runner = startRunner();
          t.after(() => runner.child.kill('SIGKILL'));
          await started(runner);
          const dataDir = dataDirs.at(-1) as string;
          const { id, revisionId } = await uploadedDeployment(`uploaded-${kind}`);
          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'DEPLOYED', `${revision.status_message}\n${runner.output.join('')}`);
          const lines = await buildLog(id, revisionId);
          assert.ok(
            lines.some((line) => /^Unpacked \d+ files; found langgraph\.json$/.test(line)),
            lines.join('\n'),
          );
          assert.deepEqual(fs.readdirSync(path.join(dataDir, 'archives')), [], 'the downloaded archive is removed after the build');
          runner.child.kill('SIGTERM');
          assert.equal(await runner.exited, 0, runner.output.join(''));
        },
      );

      test('a code-host revision is built by a runner process, pushed to the registry, and reaches DEPLOYED', { timeout: deadline(120_000) }, async (t) => {
        const healthPort = await freePort();
        const runner = startRunner({ healthPort });
        t.after(() => runner.child.kill('SIGKILL'));
        await started(runner);
        const { id, revisionId } = await newDeployment(`built-${kind}`);
        const revision = await terminal(id, revisionId);
        assert.equal(revision.status, 'DEPLOYED', `${revision.status_message}\n${runner.output.join('')}`);
        const full = (await api('GET', `/v2/deployments/${id}/revisions/${revisionId}`)).body;
        assert.equal(full.source_revision_config.repo_commit_sha, headSha, 'the commit the runner fetched');
        const pushed = await fetch(`${registry.url}/v2/`);
        assert.equal(pushed.status, 401, 'the registry asks for a token');
        // The revision can be DEPLOYED before the runner has put its report's spool away and let the job go.
        const healthBody = await eventually(async () => {
          const health = await fetch(`http://127.0.0.1:${healthPort}/healthz`);
          assert.equal(health.status, 200);
          const body = (await health.json()) as { status: string; running: string[]; last_contact: string | null };
          return body.running.length === 0 && body;
        }, 'the runner idle again');
        assert.equal(healthBody.status, 'ok');
        assert.ok(healthBody.last_contact, 'the runner has reached the control plane');
        const metrics = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
        for (const expected of [/^berth_runner_jobs_total\{outcome="succeeded"\} 1$/m, /^berth_runner_jobs_running 0$/m, /^berth_runner_concurrency 1$/m]) {
          assert.match(metrics, expected);
        }
        const lastPoll = Number(/^berth_runner_last_poll_timestamp_seconds (\S+)$/m.exec(metrics)?.[1]);
        assert.ok(Math.abs(Date.now() / 1000 - lastPoll) < 120, `the last poll was just now (${lastPoll})`);
        const lines = await buildLog(id, revisionId);
        for (const expected of ['A build runner took the build.', 'Fetching', `Pushed ${registry.host}/`]) {
          assert.ok(
            lines.some((line) => line.startsWith(expected)),
            `${expected} in\n${lines.join('\n')}`,
          );
        }
        runner.child.kill('SIGTERM');
        assert.equal(await runner.exited, 0, runner.output.join(''));
      });

      test(
        'a runner SIGKILLed mid-build loses its lease; another finishes the build and the revision reaches DEPLOYED once',
        { timeout: deadline(120_000) },
        async () => {
          assert.ok(
            runners.every((runner) => runner.child.exitCode !== null || runner.child.signalCode !== null),
            'no other runner runs',
          );
          const doomed = startRunner({ hold: true });
          await started(doomed);
          const { id, revisionId } = await newDeployment(`takeover-${kind}`);
          await eventually(async () => (await buildLog(id, revisionId)).includes('Holding the build'), 'the first runner builds', 60_000);
          doomed.child.kill('SIGKILL');
          await doomed.exited;
          const rescuer = startRunner({ key: otherRunnerKey });
          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'DEPLOYED', `${revision.status_message}\n${rescuer.output.join('')}`);
          const lines = await buildLog(id, revisionId);
          assert.ok(
            lines.some((line) => /took the build over/.test(line)),
            lines.join('\n'),
          );
          assert.equal(lines.filter((line) => line.startsWith('Pushed')).length, 1, 'built and pushed once');
          const events = await api('GET', `/v2/deployments/${id}/revisions/${revisionId}/timeline`);
          if (events.status === 200) {
            const deployed = JSON.stringify(events.body).match(/"DEPLOYED"/g) ?? [];
            assert.ok(deployed.length <= 1, `DEPLOYED once: ${JSON.stringify(events.body)}`);
          }
          rescuer.child.kill('SIGTERM');
          assert.equal(await rescuer.exited, 0, rescuer.output.join(''));
        },
      );

      /** No runner of an earlier test may claim what the next one queues. */
      function noRunnerRuns(): void {
        assert.ok(
          runners.every((runner) => runner.child.exitCode !== null || runner.child.signalCode !== null),
          'no other runner runs',
        );
      }

      test(
        'the job carries the deployment’s build timeout and resources; a runner cut off from Berth stops the build at that timeout itself, and Berth’s own timeout fails the revision',
        { timeout: deadline(120_000) },
        async (t) => {
          noRunnerRuns();
          const proxy = await startCutProxy(Number(new URL(server.url).port));
          t.after(() => proxy.close());
          const runner = startRunner({ url: proxy.url, hold: true });
          t.after(() => runner.child.kill('SIGKILL'));
          await started(runner);
          const timeoutSeconds = 20;
          const { id, revisionId } = await newDeployment(`timeout-${kind}`, {
            build_timeout_seconds: timeoutSeconds,
            resource_spec: { cpu: 0.5, memory_mb: 700 },
          });
          await eventually(async () => (await buildLog(id, revisionId)).includes('Holding the build'), 'the runner builds', 60_000);
          assert.ok((await buildLog(id, revisionId)).includes(`Build limits: ${timeoutSeconds} s, 700 MB, 0.5 CPU`), 'the job carried the limits');
          // Cut off, the runner never hears Berth cancel the job: only its own timer stops the build.
          proxy.cut();
          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'BUILD_FAILED');
          assert.match(revision.status_message ?? '', new RegExp(`^Build timed out after ${timeoutSeconds} s\\..*source_config\\.build_timeout_seconds`));
          await eventually(async () => runner.output.join('').includes('ran past its build_timeout_seconds'), 'the runner stopped the build', 60_000);
          proxy.restore();
          // Its late report is refused: the revision keeps Berth's verdict.
          await eventually(async () => runner.output.join('').includes('its report is dropped'), 'the runner gave the job up', 60_000);
          const after = (await api('GET', `/v2/deployments/${id}/revisions/${revisionId}`)).body;
          assert.equal(after.status, 'BUILD_FAILED');
          assert.equal(after.status_message, revision.status_message);
          runner.child.kill('SIGTERM');
          assert.equal(await runner.exited, 0, runner.output.join(''));
        },
      );

      test(
        'a runner cut off from Berth spools its lines and report; restarted, it delivers every line once, in order, and the revision reaches DEPLOYED',
        { timeout: deadline(180_000) },
        async (t) => {
          noRunnerRuns();
          const proxy = await startCutProxy(Number(new URL(server.url).port));
          t.after(() => proxy.close());
          const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-runner-'));
          const go = path.join(dataDir, 'go');
          const lineCount = 450;
          const env = { RUNNER_TEST_GO_FILE: go, RUNNER_TEST_LINES: String(lineCount) };
          const first = startRunner({ url: proxy.url, dataDir, env });
          t.after(() => first.child.kill('SIGKILL'));
          await started(first);
          const { id, revisionId } = await newDeployment(`spooled-${kind}`);
          await eventually(async () => (await buildLog(id, revisionId)).includes('Holding the build'), 'the runner builds', 60_000);
          proxy.cut();
          fs.writeFileSync(go, '');
          await eventually(async () => first.output.join('').includes('the build ended; its report is spooled'), 'the build ended while cut off', 60_000);
          first.child.kill('SIGKILL');
          await first.exited;
          const spool = path.join(dataDir, 'spool');
          const [file, ...others] = fs.readdirSync(spool);
          assert.ok(file && others.length === 0, 'one spool file for the job');
          assert.equal(fs.statSync(path.join(spool, file)).mode & 0o777, 0o600);
          assert.ok(!(await buildLog(id, revisionId)).includes('spooled line 1'), 'nothing reached Berth while cut off');

          proxy.restore();
          const second = startRunner({ dataDir, env });
          t.after(() => second.child.kill('SIGKILL'));
          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'DEPLOYED', `${revision.status_message}\n${second.output.join('')}`);
          const spooled = (await buildLog(id, revisionId)).filter((line) => line.startsWith('spooled line '));
          assert.deepEqual(
            spooled,
            Array.from({ length: lineCount }, (_, n) => `spooled line ${n + 1}`),
            'every line once, in order',
          );
          const all = await buildLog(id, revisionId);
          assert.ok(!all.some((line) => /took the build over/.test(line)), 'the spooled report ended the build: no second claim built it');
          assert.equal(all.filter((line) => line.startsWith('Pushed')).length, 1, 'built once: the report was delivered');
          await eventually(async () => fs.readdirSync(spool).length === 0, 'the spool is removed once delivered');
          second.child.kill('SIGTERM');
          assert.equal(await second.exited, 0, second.output.join(''));
        },
      );

      test(
        'an engine that resumes a build (restarted mid-build) relays each log batch once, in order, across claims',
        { timeout: deadline(120_000) },
        async () => {
          noRunnerRuns();
          const engine = server.berth.engine;
          assert.ok(engine);
          const { id, revisionId } = await newDeployment(`relay-once-${kind}`);
          // The claim waits for the job to be queued.
          const one = runnerApi(runnerKey);
          const claimed = await one('POST', '/v1/runner/jobs/claim', { body: { wait: 30 } });
          assert.equal(claimed.status, 200, claimed.text);
          const job = claimed.body.job;
          assert.equal(job?.revision_id, revisionId, claimed.text);
          const jobUrl = `/v1/runner/jobs/${job.id}`;
          const send = async (runner: Client, token: string, seq: number, message: string): Promise<boolean> => {
            const res = await runner('POST', `${jobUrl}/logs`, { body: { lease_token: token, seq, lines: [{ level: 'INFO', message }] } });
            assert.equal(res.status, 200, res.text);
            return res.body.stored as boolean;
          };
          const relayed = async () => (await buildLog(id, revisionId)).filter((line) => line.startsWith('relayed line '));

          assert.ok(await send(one, job.lease_token, 0, 'relayed line 1'));
          assert.ok(await send(one, job.lease_token, 1, 'relayed line 2'));
          await eventually(async () => (await relayed()).includes('relayed line 2'), 'the engine relayed the first batches');
          // Berth restarts mid-build: the engine that resumes the revision waits for the same job.
          await engine.stop();
          await engine.start();
          assert.ok(await send(one, job.lease_token, 2, 'relayed line 3'));
          assert.equal(await send(one, job.lease_token, 1, 'relayed line 2'), false, 'a batch relayed already is still known when sent again');
          await eventually(async () => (await relayed()).includes('relayed line 3'), 'the resumed engine relays');

          // The first runner's lease runs out; another claims the job, numbering its batches from 0 again.
          const two = runnerApi(otherRunnerKey);
          const taken = await two('POST', '/v1/runner/jobs/claim', { body: { wait: 30 } });
          assert.equal(taken.body.job?.id, job.id, taken.text);
          const token = taken.body.job.lease_token as string;
          assert.ok(await send(two, token, 0, 'relayed line 4'));
          await eventually(async () => (await relayed()).includes('relayed line 4'), 'the engine relayed the new claim’s batch');
          await engine.stop();
          await engine.start();
          assert.ok(await send(two, token, 1, 'relayed line 5'));
          // The resumed engine watches the job again before it ends (one that ends while no engine watches: the test below).
          await eventually(async () => (await relayed()).includes('relayed line 5'), 'the engine resumed after the second restart relays');
          const failed = await two('POST', `${jobUrl}/result`, { body: { lease_token: token, status: 'failed', message: 'the linker broke' } });
          assert.deepEqual(failed.body, { outcome: 'applied' });

          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'BUILD_FAILED');
          assert.match(revision.status_message ?? '', /the linker broke/, (await buildLog(id, revisionId)).join('\n'));
          assert.deepEqual(
            await relayed(),
            [1, 2, 3, 4, 5].map((n) => `relayed line ${n}`),
            'every line once, in order',
          );
        },
      );

      test(
        'a job its runner ends while no engine watches is answered by the engine that resumes the revision, not built again',
        { timeout: deadline(120_000) },
        async () => {
          noRunnerRuns();
          const engine = server.berth.engine;
          assert.ok(engine);
          const { id, revisionId } = await newDeployment(`unwatched-${kind}`);
          const one = runnerApi(runnerKey);
          const claimed = await one('POST', '/v1/runner/jobs/claim', { body: { wait: 30 } });
          const job = claimed.body.job;
          assert.equal(job?.revision_id, revisionId, claimed.text);
          await eventually(async () => (await buildLog(id, revisionId)).includes('A build runner took the build.'), 'the engine saw the claim');
          // Berth stops; the runner ends the build before any engine watches the revision again.
          await engine.stop();
          try {
            const ended = await one('POST', `/v1/runner/jobs/${job.id}/result`, {
              body: { lease_token: job.lease_token, status: 'failed', message: 'the assembler broke' },
            });
            assert.deepEqual(ended.body, { outcome: 'applied' });
          } finally {
            await engine.start();
          }
          const revision = await terminal(id, revisionId);
          assert.equal(revision.status, 'BUILD_FAILED', (await buildLog(id, revisionId)).join('\n'));
          assert.match(revision.status_message ?? '', /the assembler broke/);
          const jobs = await server.berth.db.selectFrom('build_jobs').select(['id', 'answered_at']).where('revision_id', '=', revisionId).execute();
          assert.deepEqual(
            jobs.map((row) => row.id),
            [job.id],
            'no second job was queued',
          );
          assert.ok(jobs[0]?.answered_at, 'the job is marked answered');
        },
      );

      test('no key, token or password in any runner log or the server log', () => {
        assert.ok(runners.length >= 3);
        const everything = [...runners.flatMap((runner) => runner.output), ...server.logs].join('');
        for (const secret of [runnerKey, otherRunnerKey, server.adminKey, GIT_PASSWORD]) assert.ok(!everything.includes(secret), 'a secret reached a log');
        assert.ok(!/lease_token"\s*:\s*"[A-Za-z0-9_-]{20,}/.test(everything), 'a lease token reached a log');
      });
    });
  }
});
