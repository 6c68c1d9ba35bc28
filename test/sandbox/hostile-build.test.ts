import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, readFile, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { containersEnv, liveProcessesWith, removeContainers, run, ROOT } from '../build/helpers.js';
import { BUILD_TEST_BASE_IMAGE, TEST_BASE_IMAGE_NODE } from '../support/base-image.js';
import { TERMINAL_STATUSES } from '../../src/domain/revision-status.js';
import { buildSandboxUnavailable, type TestBuildDir, tempBuildDir } from '../support/build-sandbox.js';
import { createRepository, type FixtureRepository, git, type TempDir, tempDir } from '../support/git-repos.js';
import { client, type Client as ApiClient } from '../support/http.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { type BerthProcess, freePort, spawnBerth, stopBerth } from '../support/process.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');
const KEY = `berth_test_${randomUUID()}_${randomUUID()}`;
const MEMORY_MB = 768;
const PIDS = 512;
const DISK_MB = 1536;
const skip = await buildSandboxUnavailable();

interface Outcome {
  status: string;
  message: string;
  log: string;
}

/**
 * Issue 20's hostile builds, as a workspace member would send them: a project whose
 * langgraph.json carries `dockerfile_lines` that try to reach the host. Each attack fails
 * (the step cannot see, write, signal or connect to anything of the host, and what it
 * starts dies with it) while the same project without the attack builds and deploys; the
 * limits stop a build that takes too much memory, too many processes or too much disk.
 */
describe('hostile builds cannot reach the host', { skip: skip ?? false }, () => {
  holdMachineTurnForSuite({ before, after });
  let repos: TempDir;
  let data: TempDir;
  let builds: TestBuildDir;
  let repo: FixtureRepository;
  let berth: BerthProcess;
  let api: ApiClient;
  let integrationId: string;
  let victim: ChildProcess;
  let listener: net.Server;
  let listenerPort: number;
  const connections: string[] = [];
  const marker = randomBytes(4).toString('hex');
  // Numbers that make this run's processes findable by their command line.
  const tag = String(10_000 + (randomBytes(2).readUInt16BE() % 50_000));
  const deployments: string[] = [];
  let repoUrl: string;
  let encryptionKey: string;

  before(
    async () => {
      const base = await run('bash', BUILD_TEST_BASE_IMAGE, 15 * 60_000);
      assert.equal(base.code, 0, `scripts/build-base-images.sh failed:\n${base.stderr}`);
      repos = await tempDir('berth-hostile-repos-');
      data = await tempDir('berth-hostile-data-');
      builds = await tempBuildDir({ diskMb: DISK_MB });
      repo = await createRepository(repos.path, { defaultBranch: 'main' });
      await cp(FIXTURE, repo.work, { recursive: true });
      await git(repo.work, ['add', '.']);
      await git(repo.work, ['commit', '--quiet', '-m', 'the echo agent']);
      await git(repo.work, ['push', '--quiet', 'origin', 'main']);

      // A process of the host the build will try to kill, and a service on loopback it will try to reach.
      victim = spawn('sleep', ['86399'], { stdio: 'ignore' });
      listener = net.createServer((socket) => {
        connections.push(String(socket.remoteAddress));
        socket.end('host service\n');
      });
      await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
      listenerPort = (listener.address() as net.AddressInfo).port;

      berth = await spawnBerth({
        ...(containersEnv() as Record<string, string>),
        ...builds.env,
        BERTH_DATA_DIR: data.path,
        BERTH_BOOTSTRAP_API_KEY: KEY,
        BERTH_CONTAINER_RUNTIME: 'podman',
        BERTH_BUILDER: 'buildah',
        BERTH_BASE_IMAGE_NODE: TEST_BASE_IMAGE_NODE,
        BERTH_BUILD_MEMORY_MB: String(MEMORY_MB),
        BERTH_BUILD_PIDS: String(PIDS),
        BERTH_ENGINE_CONCURRENCY: '4',
        BERTH_ENGINE_WORKSPACE_SLOTS: '3',
      });
      api = client(berth.url, { key: KEY });
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: { provider: 'git', name: 'local git', git: { repositories: [repo.bare] } },
      });
      assert.equal(integration.status, 201, integration.text);
      integrationId = integration.body.id;
      const [listed] = (await api('GET', `/v1/integrations/codehost/${integrationId}/repos`)).body as { url: string }[];
      assert.ok(listed);
      repoUrl = listed.url;
      // Generated on first start (no BERTH_ENCRYPTION_KEY): a root-only file of the data directory.
      encryptionKey = (await readFile(path.join(data.path, 'encryption.key'), 'utf8')).trim();
      await launchAttacks();
    },
    { timeout: deadline(20 * 60_000) },
  );

  after(async () => {
    for (const id of deployments) await api?.('DELETE', `/v2/deployments/${id}`).catch(() => undefined);
    for (const id of deployments) {
      await eventually(async () => (await api('GET', `/v2/deployments/${id}`)).status === 404, `deployment ${id} to be deleted`, 60_000).catch(() => undefined);
    }
    if (berth) await stopBerth(berth);
    victim?.kill('SIGKILL');
    listener?.close();
    for (const id of deployments) {
      const names = (await run('podman', ['ps', '-a', '--filter', `label=berth.deployment-id=${id}`, '--format', '{{.Names}}'])).stdout
        .split('\n')
        .filter(Boolean);
      await removeContainers(...names);
      const images = (await run('podman', ['images', '--filter', `label=berth.deployment-id=${id}`, '--format', '{{.ID}}'])).stdout.split('\n').filter(Boolean);
      if (images.length > 0) await run('podman', ['rmi', '-f', ...images]);
    }
    await builds?.remove();
    await repos?.remove();
    await data?.remove();
  });

  // One working clone: commits take turns, builds run side by side.
  let commits: Promise<unknown> = Promise.resolve();

  /** Deploys the echo agent with these Dockerfile lines (on a branch of their own) and waits for the revision's end. */
  async function deployWith(name: string, lines: string[], sourceConfig: Record<string, unknown> = {}): Promise<Outcome> {
    const config = { node_version: '20', graphs: { echo: './src/graph.ts:graph' }, dockerfile_lines: lines };
    const committed = commits.then(() => repo.commit(name, { 'langgraph.json': `${JSON.stringify(config, null, 2)}\n` }, `attack: ${name}`));
    commits = committed.catch(() => undefined);
    await committed;
    const created = await api('POST', '/v2/deployments', {
      body: {
        name: `hostile-${name}-${marker}`,
        source: 'github',
        source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: false, ...sourceConfig },
        source_revision_config: { repo_ref: name, langgraph_config_path: 'langgraph.json' },
        secrets: [],
      },
    });
    assert.equal(created.status, 201, created.text);
    deployments.push(created.body.id);
    let revision = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=300`);
    // The server answers at its longest wait; a busy machine may need several.
    for (let i = 0; i < 6 && revision.status === 200 && !TERMINAL_STATUSES.has(revision.body.status); i++) {
      revision = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}?wait_for_terminal=300`);
    }
    assert.equal(revision.status, 200, revision.text);
    const logs = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build&limit=1000`);
    assert.equal(logs.status, 200, logs.text);
    const log = (logs.body.logs as { message: string }[]).map((line) => line.message).join('\n');
    return { status: revision.body.status, message: revision.body.status_message ?? '', log };
  }

  /**
   * The attacks' builds, started together once Berth is up (three at a time, the workspace's
   * slots), each test awaiting its own: one after another they took five minutes, mostly
   * waiting on the builder's I/O. The limits' builds are not among them: one fills the
   * workspace's build disk, which would fail the others.
   */
  const attacks = new Map<string, Promise<Outcome>>();
  function launch(name: string, lines: string[], sourceConfig: Record<string, unknown> = {}): void {
    const outcome = deployWith(name, lines, sourceConfig);
    outcome.catch(() => undefined); // awaited, and so reported, by its test
    attacks.set(name, outcome);
  }
  function attack(name: string): Promise<Outcome> {
    const outcome = attacks.get(name);
    assert.ok(outcome, `the attack ${name} was launched`);
    return outcome;
  }

  const hostAddress = () =>
    Object.values(os.networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal)?.address ?? '127.0.0.1';

  const loopbackTargets = () => [
    `127.0.0.1:${listenerPort}`,
    `10.0.2.2:${listenerPort}`,
    `${hostAddress()}:${listenerPort}`,
    `10.0.2.2:${new URL(berth.url).port}`,
    '169.254.169.254:80',
  ];
  let daemonPort: number;

  async function launchAttacks(): Promise<void> {
    const keyFile = path.join(data.path, 'encryption.key');
    const probe = `for (const t of ${JSON.stringify(loopbackTargets())}) { const [h, p] = t.split(':'); await new Promise((done) => { const s = require('net').connect(Number(p), h); s.setTimeout(4000, () => { console.log('blocked', t, 'timeout'); s.destroy(); done(); }); s.on('connect', () => { console.log('CONNECTED', t); s.destroy(); done(); }); s.on('error', (e) => { console.log('blocked', t, e.code); done(); }); }); }`;
    daemonPort = await freePort();
    launch('clean', ['RUN id && cat /proc/self/uid_map && grep CapEff /proc/self/status']);
    launch('read-host', [
      // Through any process's root: unconfined (chroot isolation in the host's PID namespace) that is Berth's own.
      `RUN cat ${keyFile} /proc/*/root${keyFile} /proc/*/cwd/encryption.key /etc/shadow 2>&1 | head -c 4000; echo read-attempted`,
      `RUN ls -la ${data.path} 2>&1 | head -5; ls /proc | grep -c . ; echo listed`,
    ]);
    launch('write-host', [
      `RUN echo pwned > /tmp/berth-pwned-${marker} && mkdir -p ${data.path} && echo pwned > ${data.path}/pwned-${marker} && echo wrote-in-step`,
      `RUN for root in /proc/*/root; do echo pwned > $root/tmp/berth-pwned-${marker} 2>/dev/null; done; echo wrote-through-proc`,
    ]);
    launch('mount-symlink', [
      `FROM ${TEST_BASE_IMAGE_NODE}:20 AS link`,
      'RUN ln -s / /rootlink',
      `FROM ${TEST_BASE_IMAGE_NODE}:20`,
      `RUN --mount=type=bind,from=link,source=/rootlink,target=/host cat /host${keyFile}`,
      `RUN --mo\\`,
      `unt=type=bind,from=link,source=/rootlink,target=/host,rw sh -c 'echo x > /host/tmp/berth-pwned-mount-${marker}'`,
    ]);
    launch('kill-host', [`RUN kill -TERM ${victim.pid} ; kill -KILL ${victim.pid} ; echo kill-attempted`]);
    launch('loopback', [`RUN node -e "(async () => { ${probe.replaceAll('"', '\\"')} })()"`]);
    launch('daemon', [
      `RUN setsid sh -c 'exec sleep 7${tag}' </dev/null >/dev/null 2>&1 & echo started-sleeper`,
      // It greets with a word of its own: the port it took may serve another test's server by the time it is tried.
      `RUN setsid node -e "require('net').createServer(s => s.end('daemon-${tag}')).listen(${daemonPort}, '0.0.0.0')" </dev/null >/dev/null 2>&1 & sleep 1; echo started-server`,
    ]);
    launch('timeout', [`RUN sleep 8${tag}`], { build_timeout_seconds: 20 });
  }

  // Each build here took under a minute on a loaded machine; ten minutes (times the deadline
  // factor) only bounds a hung one, and keeps the file's limit in the runner meaningful.
  test('the project without an attack builds in the sandbox and deploys', { timeout: deadline(10 * 60_000) }, async () => {
    const outcome = await attack('clean');
    assert.equal(outcome.status, 'DEPLOYED', `${outcome.message}\n${outcome.log}`);
    assert.match(outcome.log, /with buildah as the build user/);
    // Root in the step is an unprivileged user of the host.
    const map = /^\s*0\s+(\d+)\s+1\s*$/m.exec(outcome.log);
    assert.ok(map, `the step's uid map is in the log:\n${outcome.log}`);
    assert.notEqual(Number(map[1]), 0, 'root in the build is not root on the host');
    // CAP_SYS_ADMIN (bit 21) is not among the step's capabilities, even in its own namespace.
    const capabilities = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(outcome.log)?.[1] ?? 'ffffffffff'}`);
    assert.equal(capabilities & (1n << 21n), 0n, 'no CAP_SYS_ADMIN in a build step');
  });

  test("a step cannot read a host file, even root-owned ones through another process's root", { timeout: deadline(10 * 60_000) }, async () => {
    const outcome = await attack('read-host');
    assert.equal(outcome.status, 'DEPLOYED', outcome.message);
    assert.match(outcome.log, /read-attempted/);
    assert.ok(!outcome.log.includes(KEY), 'the API key never reaches the build log');
    assert.ok(!outcome.log.includes(encryptionKey), 'the encryption key never reaches the build log');
  });

  test('a step cannot write a host file', { timeout: deadline(10 * 60_000) }, async () => {
    const outcome = await attack('write-host');
    assert.equal(outcome.status, 'DEPLOYED', outcome.message);
    assert.match(outcome.log, /wrote-in-step/, 'the step wrote into its own file system');
    assert.equal(await stat(`/tmp/berth-pwned-${marker}`).catch(() => null), null, "nothing appears in the host's /tmp");
    assert.equal(await stat(path.join(data.path, `pwned-${marker}`)).catch(() => null), null, 'nothing appears in the data directory');
  });

  test(
    'RUN --mount through a symbolic link in another stage (CVE-2024-1753) is refused before the builder sees it',
    { timeout: deadline(10 * 60_000) },
    async () => {
      const outcome = await attack('mount-symlink');
      assert.equal(outcome.status, 'BUILD_FAILED');
      assert.match(outcome.message, /may not use --mount/);
      assert.ok(!outcome.log.includes(encryptionKey));
      assert.ok(!/STEP \d+\/\d+/.test(outcome.log), 'the builder never started');
      assert.equal(await stat(`/tmp/berth-pwned-mount-${marker}`).catch(() => null), null);
    },
  );

  test('a step cannot signal a host process', { timeout: deadline(10 * 60_000) }, async () => {
    const outcome = await attack('kill-host');
    assert.equal(outcome.status, 'DEPLOYED', outcome.message);
    assert.match(outcome.log, /kill-attempted/);
    assert.equal(victim.exitCode, null, 'the host process is alive');
    assert.equal(victim.signalCode, null);
  });

  test("a step reaches no address of the host (loopback through slirp4netns, its own address, Berth's API)", { timeout: deadline(10 * 60_000) }, async () => {
    const targets = loopbackTargets();
    const outcome = await attack('loopback');
    assert.equal(outcome.status, 'DEPLOYED', outcome.message);
    for (const target of targets)
      assert.match(outcome.log, new RegExp(`^blocked ${target.replaceAll('.', '\\.')}`, 'm'), `${target} is unreachable:\n${outcome.log}`);
    // (The step's own command, echoed in the log, holds the word too: only its output counts.)
    assert.doesNotMatch(outcome.log, /^CONNECTED /m);
    assert.deepEqual(connections, [], 'the host service saw no connection from the build');
  });

  test('nothing a step starts outlives its build', { timeout: deadline(10 * 60_000) }, async () => {
    const outcome = await attack('daemon');
    assert.equal(outcome.status, 'DEPLOYED', outcome.message);
    assert.match(outcome.log, /started-server/);
    assert.deepEqual(await liveProcessesWith(`sleep 7${tag}`), [], 'no sleeper is left');
    assert.deepEqual(await liveProcessesWith(`listen(${daemonPort}`), [], 'no server is left');
    assert.doesNotMatch(await greetingOn(daemonPort), new RegExp(`daemon-${tag}`), 'nothing serves on the host from the build');
  });

  test('a build past its memory, process or disk limit fails and says which', { timeout: deadline(10 * 60_000) }, async () => {
    await Promise.allSettled(attacks.values());
    const [memory, processes, disk] = await Promise.all([
      deployWith('memory', [`RUN node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 24, 1))"`]),
      deployWith('processes', [
        `RUN node -e "const { spawn } = require('child_process'); for (let i = 0; i < 2000; i++) spawn('sleep', ['20']).on('error', () => process.exit(3))"`,
      ]),
      deployWith('disk', [`RUN dd if=/dev/zero of=/fill bs=1M count=${DISK_MB + 256}`]),
    ]);
    assert.equal(memory.status, 'BUILD_FAILED');
    assert.match(memory.message, new RegExp(`more than its ${MEMORY_MB} MB of memory`));
    assert.equal(processes.status, 'BUILD_FAILED');
    assert.match(processes.message, new RegExp(`more than ${PIDS} processes`));
    assert.equal(disk.status, 'BUILD_FAILED');
    assert.match(disk.message, new RegExp(`filled this workspace's ${DISK_MB} MB of build disk`));
    assert.deepEqual(await liveProcessesWith("spawn('sleep', ['20'])"), []);
  });

  test('a build past its timeout is stopped with everything it started', { timeout: deadline(10 * 60_000) }, async () => {
    const sleeper = `sleep 8${tag}`;
    const outcome = await attack('timeout');
    assert.equal(outcome.status, 'BUILD_FAILED');
    assert.match(outcome.message, /timed out after 20 s/);
    assert.deepEqual(await liveProcessesWith(sleeper), [], 'the step was killed with the build');
  });

  test("Berth's data directory is 0700 and its database and key 0600", async () => {
    assert.equal((await stat(data.path)).mode & 0o777, 0o700);
    for (const file of ['berth.sqlite', 'berth.sqlite-wal', 'encryption.key']) {
      assert.equal((await stat(path.join(data.path, file))).mode & 0o777, 0o600, file);
    }
  });
});

/**
 * What a server on the host's loopback at `port` says on connecting ('' when nothing listens).
 * The build's daemon would greet and close at once; a server that stays silent is another's,
 * and after a while its silence is the answer.
 */
function greetingOn(port: number): Promise<string> {
  return new Promise((resolve) => {
    const received: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1');
    const done = () => {
      socket.destroy();
      resolve(Buffer.concat(received).toString());
    };
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.setTimeout(deadline(5_000), done);
    socket.once('close', done);
    socket.once('error', done);
  });
}
