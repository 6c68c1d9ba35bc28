import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { containersEnv, run, ROOT } from '../build/helpers.js';
import { BUILD_TEST_BASE_IMAGE, TEST_BASE_IMAGE_NODE } from '../support/base-image.js';
import { buildSandboxUnavailable, type TestBuildDir, tempBuildDir } from '../support/build-sandbox.js';
import { deadline } from '../support/deadline.js';
import { type GitHttpServer, startGitHttpServer } from '../support/git-http-server.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { client, type Client } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import type { TokenRegistry } from '../support/registry.js';
import { eventually } from '../support/runtimes.js';
import type { TestServer } from '../support/server.js';
import { startRunnerControlPlane } from '../support/runner-plane.js';
import { nodeArguments } from '../support/entry.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');
const skip = await buildSandboxUnavailable();

interface Outcome {
  status: string;
  message: string;
  log: string;
}

/**
 * Issue 25: `berth builder` builds in the build sandbox, as the control plane does. A real
 * control plane handing its builds to runners, a real `berth builder` (src/main.ts, as root,
 * the sandbox on by default) and a registry trusting Berth's tokens. A project whose install
 * command and Dockerfile lines try to read the runner's key file, its data directory and its
 * environment, and to reach what the runner's machine serves itself, gets none of them, and
 * its root is nobody on the machine, while the same project builds and is pushed.
 */
describe('berth builder builds in the sandbox', { skip: skip ?? false }, () => {
  holdMachineTurnForSuite({ before, after });
  let server: TestServer;
  let registry: TokenRegistry;
  let api: Client;
  let repos: TempDir;
  let repo: FixtureRepository;
  let gitServer: GitHttpServer;
  let builds: TestBuildDir;
  let dataDir: string;
  let keyDir: string;
  let keyFile: string;
  let runner: ChildProcess | undefined;
  let exited: Promise<number | null> = Promise.resolve(null);
  const output: string[] = [];
  let integrationId = '';
  let repoUrl = '';
  let runnerKey = '';
  const marker = `runner-secret-${randomBytes(12).toString('hex')}`;
  const gitPassword = `git-${randomBytes(12).toString('hex')}`;
  // What a runner's machine serves itself only (its cloud's instance credentials, say), on every address of the host.
  const machineSecret = `machine-secret-${randomBytes(12).toString('hex')}`;
  const machineConnections: string[] = [];
  let machineService: http.Server | undefined;
  let machinePort = 0;
  const deployments: string[] = [];

  before(
    async () => {
      const base = await run('bash', BUILD_TEST_BASE_IMAGE, 15 * 60_000);
      assert.equal(base.code, 0, `scripts/build-base-images.sh failed:\n${base.stderr}`);
      ({ server, registry } = await startRunnerControlPlane('sqlite', { waitSeconds: 120 }));
      api = client(server.url, { key: server.adminKey });

      repos = await tempDir('berth-runner-sandbox-repos-');
      repo = await createRepository(repos.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
      await cp(FIXTURE, repo.work, { recursive: true });
      await git(repo.work, ['add', '.']);
      await git(repo.work, ['commit', '--quiet', '-m', 'the echo agent']);
      await git(repo.work, ['push', '--quiet', 'origin', 'main']);
      // Behind a password, as a company's git server: the runner fetches with the credential its job gives.
      gitServer = await startGitHttpServer({ root: repos.path, auth: { username: 'git', password: gitPassword } });
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: { provider: 'git', name: 'company git', git: { repositories: [`${gitServer.url}/acme/agent.git`], username: 'git', password: gitPassword } },
      });
      assert.equal(integration.status, 201, integration.text);
      integrationId = integration.body.id;
      const [listed] = (await api('GET', `/v1/integrations/codehost/${integrationId}/repos`)).body as { url: string }[];
      assert.ok(listed);
      repoUrl = listed.url;
      const key = await api('POST', '/v1/api-keys', { body: { name: 'sandboxed-runner', role: 'runner' } });
      assert.equal(key.status, 201, key.text);
      runnerKey = key.body.key;

      // The runner's key as an operator keeps it (a root-only environment file), and a secret in its data directory.
      keyDir = await mkdtemp(path.join(os.tmpdir(), 'berth-runner-key-'));
      keyFile = path.join(keyDir, 'builder.env');
      await writeFile(keyFile, `BERTH_RUNNER_KEY=${runnerKey}\n`, { mode: 0o600 });
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'berth-runner-data-'));
      await writeFile(path.join(dataDir, 'secret'), `${marker}\n`, { mode: 0o644 });
      builds = await tempBuildDir();
      machineService = http.createServer((request, response) => {
        machineConnections.push(String(request.socket.remoteAddress));
        response.end(machineSecret);
      });
      await new Promise<void>((resolve) => machineService?.listen(0, '0.0.0.0', resolve));
      machinePort = (machineService.address() as net.AddressInfo).port;

      runner = spawn(process.execPath, [...nodeArguments('src/main.ts'), 'builder'], {
        cwd: ROOT,
        env: {
          ...containersEnv(),
          ...builds.env,
          BERTH_URL: server.url,
          BERTH_RUNNER_KEY: runnerKey,
          BERTH_RUNNER_DATA_DIR: dataDir,
          BERTH_RUNNER_BUILDER: 'buildah',
          BERTH_RUNNER_CONCURRENCY: '2',
          BERTH_RUNNER_POLL_SECONDS: '5',
          BERTH_BASE_IMAGE_NODE: TEST_BASE_IMAGE_NODE,
          RUNNER_MARKER: marker,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      runner.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      runner.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      const child = runner;
      exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
      await eventually(async () => output.join('').includes('berth builder is running') || child.exitCode !== null, 'the runner started', 120_000);
      assert.equal(child.exitCode, null, `the runner refused to start:\n${output.join('')}`);
    },
    { timeout: deadline(20 * 60_000) },
  );

  after(async () => {
    if (runner && runner.exitCode === null) runner.kill('SIGTERM');
    // A runner that does not stop within a minute is killed.
    const kill = setTimeout(() => runner?.kill('SIGKILL'), deadline(60_000));
    await exited;
    clearTimeout(kill);
    for (const id of deployments) {
      const images = (await run('podman', ['images', '--filter', `label=berth.deployment-id=${id}`, '--format', '{{.ID}}'])).stdout.split('\n').filter(Boolean);
      if (images.length > 0) await run('podman', ['rmi', '-f', ...images]);
    }
    machineService?.close();
    await server?.close();
    await registry?.stop();
    await gitServer?.close();
    await repos?.remove();
    await builds?.remove();
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Deploys the echo agent with this install command (null: the project's own) and waits for the revision's end. */
  async function deployWith(name: string, installCommand: string | null, ref = 'main'): Promise<Outcome> {
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `runner-sandbox-${name}`,
        source: 'codehost',
        source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: false, install_command: installCommand },
        source_revision_config: { repo_ref: ref, langgraph_config_path: 'langgraph.json' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    deployments.push(created.body.id);
    const revisionUrl = `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}`;
    let revision = await api('GET', `${revisionUrl}?wait_for_terminal=300`);
    for (let i = 0; i < 6 && revision.status === 200 && ['QUEUED', 'BUILDING', 'DEPLOYING', 'AWAITING_DEPLOY'].includes(revision.body.status); i++) {
      revision = await api('GET', `${revisionUrl}?wait_for_terminal=300`);
    }
    assert.equal(revision.status, 200, revision.text);
    const logs = await api('GET', `${revisionUrl}/logs?type=build&limit=1000`);
    assert.equal(logs.status, 200, logs.text);
    const log = (logs.body.logs as { message: string }[]).map((line) => line.message).join('\n');
    return { status: revision.body.status, message: revision.body.status_message ?? '', log };
  }

  test(
    'a hostile install command reads nothing of the runner while a benign build of the same project is pushed',
    { timeout: deadline(20 * 60_000) },
    async () => {
      // Each attempt prints what it got; a refusal prints nothing of the runner's. The install
      // command may hold no shell syntax but `&&`: it prints the build's environment, and the
      // project's own Dockerfile lines (langgraph.json) do the rest, as a hostile project would.
      const attack = [
        `RUN cat ${keyFile} /proc/*/root${keyFile} 2>&1 | head -c 2000; echo key-read-attempted`,
        `RUN cat ${dataDir}/secret /proc/*/root${dataDir}/secret /proc/*/cwd/secret 2>&1 | head -c 2000; ls -la ${dataDir} 2>&1 | head -5; echo data-read-attempted`,
        `RUN cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -E 'RUNNER|MARKER|auths' | head -c 2000; find / -xdev -name auth.json 2>/dev/null | head; echo environment-read-attempted`,
      ];
      const hostAddress =
        Object.values(os.networkInterfaces())
          .flat()
          .find((address) => address && address.family === 'IPv4' && !address.internal)?.address ?? '127.0.0.1';
      const targets = [`127.0.0.1:${machinePort}`, `${hostAddress}:${machinePort}`, `10.0.2.2:${machinePort}`].map((target) => `'${target}'`).join(', ');
      attack.push(
        'RUN cat /proc/self/uid_map',
        `RUN node -e "const wait = 4000; for (const t of [${targets}]) require('http').get('http://' + t + '/', { timeout: wait }, (r) => r.on('data', (d) => console.log('got', t, String(d)))).on('error', (e) => console.log('blocked', t, e.code)).on('timeout', function () { console.log('blocked', t, 'timeout'); this.destroy(); })"; echo network-attempted`,
      );
      const config = { node_version: '20', graphs: { echo: './src/graph.ts:graph' }, dockerfile_lines: attack };
      await repo.commit('hostile', { 'langgraph.json': `${JSON.stringify(config, null, 2)}\n` }, 'a hostile project');
      const [benign, hostile] = await Promise.all([deployWith('benign', null), deployWith('hostile', 'env && npm ci', 'hostile')]);

      assert.equal(benign.status, 'DEPLOYED', `${benign.message}\n${benign.log}\n${output.join('')}\n${server.logs.slice(-30).join('')}`);
      assert.match(benign.log, /with buildah as the build user/);
      assert.match(benign.log, new RegExp(`^Pushing ${registry.host.replaceAll('.', '\\.')}/`, 'm'));

      assert.equal(hostile.status, 'DEPLOYED', `${hostile.message}\n${hostile.log}`);
      assert.match(hostile.log, /with buildah as the build user/);
      for (const attempt of ['key-read-attempted', 'data-read-attempted', 'environment-read-attempted'])
        assert.match(hostile.log, new RegExp(`^${attempt}$`, 'm'), `the attack ran:\n${hostile.log}`);
      assert.match(hostile.log, /^PATH=/m, "the install command printed the build's environment");
      assert.match(hostile.log, /^network-attempted$/m);
      // Root in the step is an unprivileged user of the runner's machine (unconfined, it would be root).
      const map = /^\s*0\s+(\d+)\s+1\s*$/m.exec(hostile.log);
      assert.ok(map, `the step's uid map is in the log, root mapped alone:\n${hostile.log}`);
      assert.notEqual(Number(map[1]), 0, 'root in the build is not root on the runner');
      assert.ok(!hostile.log.includes(machineSecret), "what the runner's machine serves itself never reaches the build");
      assert.deepEqual(machineConnections, [], "the runner's machine saw no connection from the build");
      assert.ok(!hostile.log.includes(runnerKey), "the runner's key never reaches the build");
      assert.ok(!hostile.log.includes(gitPassword), "the source's credential never reaches the build");
      assert.ok(!hostile.log.includes(marker), "the runner's data directory and environment never reach the build");
      assert.doesNotMatch(hostile.log, /^\S*BERTH_RUNNER_KEY=/m, "the runner's environment is not the build's");
      assert.doesNotMatch(hostile.log, /"auths"|\/auth\.json$/m, 'no push credential reaches the build');
      assert.equal((await stat(dataDir)).mode & 0o777, 0o700, "the runner's data directory is its own");
      assert.ok(!output.join('').includes(runnerKey), "the runner's key is in none of its log lines");
    },
  );
});
