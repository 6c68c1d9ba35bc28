import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { containersEnv, run } from '../build/helpers.js';
import { createRepository, type FixtureRepository, tempDir, type TempDir } from '../support/git-repos.js';
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
/** The base image the runner's identify finds for a Node project (BERTH_BASE_IMAGE_NODE, tagged `:20` as the CLI tags it). */
const BASE_NAME = 'localhost/berth-test/reuse-base';
const BASE = `${BASE_NAME}:20`;
const PROJECT = '{"graphs":{"agent":"./agent.js:graph"},"node_version":"20"}';

interface RunnerProcess {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

interface RevisionView {
  status: string;
  status_message: string | null;
  image_ref: string | null;
  build_inputs: (Record<string, unknown> & { key: string; reused_from_revision_id: string | null }) | null;
}

/**
 * Issue 25, build reuse under BERTH_BUILDER=runners: the runner reports a build's inputs
 * before building, the control plane keys them by the job's workspace and answers with an
 * image built before from the same ones (the runner builds nothing) or "build". A real
 * control plane, real `berth builder` processes (test/support/runner-process.ts with Berth's
 * own identify), a git http-backend repository and a docker-registry trusting Berth's tokens.
 */
describe('build reuse under build runners', () => {
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

  for (const kind of ['sqlite', 'postgres'] as DatabaseKind[]) {
    describe(`[${kind}]`, async () => {
      const skip = kind === 'postgres' ? await postgresUnavailable() : null;
      if (skip) {
        process.stdout.write(`# SKIP build reuse under runners [postgres]: ${skip}\n`);
        return;
      }
      let server: TestServer;
      let registry: TokenRegistry;
      let api: Client;
      let repos: TempDir;
      let repo: FixtureRepository;
      let http: GitHttpServer;
      let integrationId = '';
      let repoUrl = '';
      let runnerKey = '';
      const runners: RunnerProcess[] = [];
      const dataDirs: string[] = [];

      before(async () => {
        ({ server, registry } = await startRunnerControlPlane(kind, { leaseSeconds: 3, waitSeconds: 30 }));
        api = client(server.url, { key: server.adminKey });
        repos = await tempDir('berth-reuse-repos-');
        repo = await createRepository(repos.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
        await repo.commit('main', { 'langgraph.json': PROJECT }, 'project');
        http = await startGitHttpServer({ root: repos.path });
        const integration = await api('POST', '/v1/integrations/codehost', {
          body: { provider: 'git', name: 'company git', git: { repositories: [`${http.url}/acme/agent.git`] } },
        });
        assert.equal(integration.status, 201, integration.text);
        integrationId = integration.body.id;
        const [listed] = (await api('GET', `/v1/integrations/codehost/${integrationId}/repos`)).body as { url: string }[];
        assert.ok(listed);
        repoUrl = listed.url;
        const made = await api('POST', '/v1/api-keys', { body: { name: 'reuse-runner', role: 'runner', labels: ['linux'] } });
        assert.equal(made.status, 201, made.text);
        runnerKey = made.body.key;
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

      function startRunner(healthPort: number): RunnerProcess {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-reuse-runner-'));
        dataDirs.push(dataDir);
        const child = spawn(process.execPath, [...nodeArguments('test/support/runner-process.ts')], {
          cwd: ROOT,
          env: {
            ...containersEnv(),
            BERTH_URL: server.url,
            BERTH_RUNNER_KEY: runnerKey,
            BERTH_RUNNER_DATA_DIR: dataDir,
            BERTH_RUNNER_POLL_SECONDS: '5',
            BERTH_RUNNER_HEALTH_PORT: String(healthPort),
            BERTH_BASE_IMAGE_NODE: BASE_NAME,
            RUNNER_TEST_BASE: BASE,
            RUNNER_TEST_IDENTIFY: '1',
            LOG_LEVEL: 'debug',
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

      async function stopRunner(runner: RunnerProcess): Promise<void> {
        runner.child.kill('SIGTERM');
        assert.equal(await runner.exited, 0, runner.output.join(''));
      }

      async function revision(deploymentId: string, revisionId: string, wait = false): Promise<RevisionView> {
        const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}${wait ? '?wait_for_terminal=60' : ''}`);
        assert.equal(res.status, 200, res.text);
        // The image a revision runs is not in its view; the tests compare it as stored.
        const stored = await server.berth.db.selectFrom('revisions').select('image_ref').where('id', '=', revisionId).executeTakeFirst();
        return { ...(res.body as RevisionView), image_ref: stored?.image_ref ?? null };
      }

      async function buildLog(deploymentId: string, revisionId: string): Promise<string[]> {
        const res = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`);
        assert.equal(res.status, 200, res.text);
        return (res.body.logs as { message: string }[]).map((line) => line.message);
      }

      async function deployed(deploymentId: string, revisionId: string, runner: RunnerProcess): Promise<{ view: RevisionView; lines: string[] }> {
        const view = await revision(deploymentId, revisionId, true);
        const lines = await buildLog(deploymentId, revisionId);
        assert.equal(view.status, 'DEPLOYED', `${view.status_message}\n${lines.join('\n')}\n${runner.output.join('')}`);
        return { view, lines };
      }

      /** Builds the runner ran to the end (`succeeded`) and jobs it ended with an image reused (`reused`), from its own metrics. */
      async function runnerJobs(healthPort: number): Promise<{ succeeded: number; reused: number }> {
        const metrics = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
        const count = (outcome: string) => Number(new RegExp(`^berth_runner_jobs_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
        return { succeeded: count('succeeded'), reused: count('reused') };
      }

      async function latestRevision(res: { status: number; text: string; body: { latest_revision_id: string } }): Promise<string> {
        assert.equal(res.status, 200, res.text);
        return res.body.latest_revision_id;
      }

      test(
        'a secret-only change and an unchanged commit build nothing on the runner and reuse the image; a rollback queues no job; a changed langgraph.json builds',
        { timeout: deadline(240_000) },
        async (t) => {
          const healthPort = await freePort();
          const runner = startRunner(healthPort);
          t.after(() => runner.child.kill('SIGKILL'));
          const created = await api('POST', '/v2/deployments', {
            body: {
              name: `reuse-${kind}`,
              source: 'codehost',
              source_config: { integration_id: integrationId, repo_url: repoUrl },
              source_revision_config: { repo_ref: 'main' },
              secrets: [],
            },
          });
          assert.equal(created.status, 201, created.text);
          const id = created.body.id as string;
          const first = await deployed(id, created.body.latest_revision_id, runner);
          assert.ok(first.view.image_ref, 'built');
          assert.ok(first.view.build_inputs?.key, `the runner's inputs are kept on the revision: ${first.lines.join('\n')}`);
          assert.equal(first.view.build_inputs?.reused_from_revision_id, null);
          for (const expected of [
            /^Build inputs: commit:[0-9a-f]{40}, langgraph\.json sha256:/,
            /^Building: no revision of this workspace was built from them yet\.$/,
            /^Committed /,
          ]) {
            assert.ok(
              first.lines.some((line) => expected.test(line)),
              `${expected} in\n${first.lines.join('\n')}`,
            );
          }

          // A secret-only change, then the same commit asked for again: the runner fetches, reports, and builds nothing.
          // Each waits for the one before: a newer revision replaces one still queued.
          const changes = [{ secrets: [{ name: 'TOKEN', value: 'changed' }] }, { source_revision_config: { repo_ref: 'main' } }];
          for (const [n, body] of changes.entries()) {
            const revisionId = await latestRevision(await api('PATCH', `/v2/deployments/${id}`, { body }));
            const { view, lines } = await deployed(id, revisionId, runner);
            assert.equal(view.image_ref, first.view.image_ref, 'the first image, not a new one');
            assert.equal(view.build_inputs?.key, first.view.build_inputs?.key);
            // The newest revision with that image and those inputs: the first, then the one that reused it.
            assert.ok(view.build_inputs?.reused_from_revision_id, 'reused');
            const reused = `Reusing image ${first.view.image_ref}, built by revision ${n + 1} (${view.build_inputs?.reused_from_revision_id}) from the same inputs; the build runner built nothing.`;
            assert.ok(lines.includes(reused), `${reused} in\n${lines.join('\n')}`);
            assert.ok(!lines.some((line) => /^(Committed|Pushed) /.test(line)), lines.join('\n'));
          }

          // A rollback runs the image it names: no build job at all.
          const rollback = await latestRevision(await api('POST', `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/redeploy`));
          const back = await deployed(id, rollback, runner);
          assert.equal(back.view.image_ref, first.view.image_ref);
          assert.ok(back.lines.includes(`Reusing image ${first.view.image_ref}; no build needed.`), back.lines.join('\n'));
          const jobs = await server.berth.db.selectFrom('build_jobs').select('id').where('revision_id', '=', rollback).execute();
          assert.deepEqual(jobs, [], 'no job for the rollback');
          await api('POST', `/v2/deployments/${id}/unpin`);

          // A changed langgraph.json is another build.
          await repo.commit('main', { 'langgraph.json': PROJECT.replace('agent.js:graph', 'agent.js:changed') }, 'change langgraph.json');
          const changed = await latestRevision(await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: 'main' } } }));
          const rebuilt = await deployed(id, changed, runner);
          assert.notEqual(rebuilt.view.image_ref, first.view.image_ref);
          assert.notEqual(rebuilt.view.build_inputs?.key, first.view.build_inputs?.key);
          assert.equal(rebuilt.view.build_inputs?.reused_from_revision_id, null);
          assert.ok(
            rebuilt.lines.some((line) => line.startsWith('Committed ')),
            rebuilt.lines.join('\n'),
          );

          const counted = await eventually(async () => {
            const now = await runnerJobs(healthPort);
            return now.succeeded + now.reused === 4 && now;
          }, 'the runner counted its jobs');
          assert.deepEqual(counted, { succeeded: 2, reused: 2 }, 'two builds ran on the runner: the first and the changed langgraph.json');
          await stopRunner(runner);
        },
      );

      test(
        "a runner reporting another workspace's inputs for a job gets no image reused and learns no image name",
        { timeout: deadline(240_000) },
        async (t) => {
          const project = await tempDir('berth-reuse-upload-');
          t.after(() => project.remove());
          fs.writeFileSync(path.join(project.path, 'langgraph.json'), PROJECT);
          const file = path.join(project.path, '..', `${path.basename(project.path)}.tar.gz`);
          t.after(() => fs.rmSync(file, { force: true }));
          assert.equal((await run('tar', ['-czf', file, '-C', project.path, '.'])).code, 0);
          const archive = fs.readFileSync(file);
          const uploaded = async (as: Client, name: string) => {
            const made = await as('POST', '/v2/deployments', {
              body: { name, source: 'internal_source', source_config: { deployment_type: 'dev' }, source_revision_config: {}, secrets: [] },
            });
            assert.equal(made.status, 201, made.text);
            const url = await as('POST', `/v2/deployments/${made.body.id}/upload-url`);
            assert.equal(url.status, 200, url.text);
            const put = await fetch(url.body.upload_url, { method: 'PUT', headers: { 'content-type': 'application/gzip' }, body: archive });
            assert.equal(put.status, 200, await put.text());
            const patched = await as('PATCH', `/v2/deployments/${made.body.id}`, {
              body: { source_revision_config: { source_tarball_path: url.body.object_path } },
            });
            return { id: made.body.id as string, revisionId: await latestRevision(patched) };
          };

          // Workspace B (the server's own) builds the project on a real runner.
          const healthPort = await freePort();
          const runner = startRunner(healthPort);
          t.after(() => runner.child.kill('SIGKILL'));
          const victim = await uploaded(api, `victim-${kind}`);
          const built = await deployed(victim.id, victim.revisionId, runner);
          const image = built.view.image_ref as string;
          assert.ok(image && built.view.build_inputs?.source, built.lines.join('\n'));
          await stopRunner(runner);

          // Workspace A, same organization, the same archive: its job is claimed by hand and answered with B's exact inputs.
          const workspace = await api('POST', '/v1/workspaces', { body: { name: `attacker-${kind}` } });
          assert.equal(workspace.status, 201, workspace.text);
          const attacker = client(server.url, { key: server.adminKey, tenant: workspace.body.id });
          const target = await uploaded(attacker, `target-${kind}`);
          const hostile = client(server.url, { key: runnerKey });
          const job = await eventually(async () => (await hostile('POST', '/v1/runner/jobs/claim', { body: { wait: 5 } })).body.job, 'the job claimed');
          assert.equal(job.revision_id, target.revisionId);
          const { key: _key, reused_from_revision_id: _reused, install_command: _install, build_command: _build, ...inputs } = built.view.build_inputs ?? {};
          const jobUrl = `/v1/runner/jobs/${job.id}`;

          const answer = await hostile('POST', `${jobUrl}/inputs`, { body: { lease_token: job.lease_token, inputs } });
          assert.equal(answer.status, 200, answer.text);
          assert.deepEqual(answer.body, { action: 'build' }, "B's image is not A's");
          assert.ok(!answer.text.includes(image) && !answer.text.includes(victim.revisionId), answer.text);

          // A report that names another kind of source than the job's is refused; a runner of another organization finds no job.
          const lie = await hostile('POST', `${jobUrl}/inputs`, {
            body: { lease_token: job.lease_token, inputs: { ...inputs, source: `commit:${'a'.repeat(40)}`, commit_sha: 'a'.repeat(40) } },
          });
          assert.deepEqual([lie.status, lie.body.code], [400, 'bad_request'], lie.text);
          const foreign = await server.berth.services.tenancy.createOrganization(`reuse-other-${kind}-${Date.now()}`);
          assert.ok(foreign);
          const foreignKey = await client(server.url, { key: foreign.apiKey })('POST', '/v1/api-keys', { body: { role: 'runner' } });
          const stranger = await client(server.url, { key: foreignKey.body.key })('POST', `${jobUrl}/inputs`, {
            body: { lease_token: job.lease_token, inputs },
          });
          assert.deepEqual([stranger.status, stranger.body.code], [404, 'build_job_not_found'], stranger.text);

          await hostile('POST', `${jobUrl}/result`, { body: { lease_token: job.lease_token, status: 'failed', message: 'stopped by the test' } });
          const ended = await client(server.url, { key: server.adminKey, tenant: workspace.body.id })(
            'GET',
            `/v2/deployments/${target.id}/revisions/${target.revisionId}?wait_for_terminal=60`,
          );
          assert.equal(ended.body.status, 'BUILD_FAILED', ended.text);
          assert.equal(ended.body.image_ref ?? null, null);
          const lines = (
            (await attacker('GET', `/v2/deployments/${target.id}/revisions/${target.revisionId}/logs?type=build&limit=1000`)).body.logs as { message: string }[]
          ).map((line) => line.message);
          assert.ok(lines.includes('Building: no revision of this workspace was built from them yet.'), lines.join('\n'));
          assert.ok(!lines.some((line) => line.includes(image)), lines.join('\n'));
        },
      );
    });
  }
});
