import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { RunnerJobView } from '../../src/contract/build-runners.js';
import type { StepContext } from '../../src/engine/drivers/types.js';
import { loadRunnerConfig } from '../../src/runner/config.js';
import { jobLimits, langGraphDriverFor } from '../../src/runner/local-build.js';
import { containersEnv, ROOT } from '../build/helpers.js';
import { deadline } from '../support/deadline.js';
import { eventually } from '../support/runtimes.js';
import { claimedJob } from './kubernetes-fixtures.js';
import { nodeArguments } from '../support/entry.js';

const SETTINGS = { user: 'berth-build', dir: '/var/lib/berth-build', memoryMb: 4096, cpus: 2, pids: 2048, diskMb: 0, denyNetworks: [] };

test("a job's resource_spec bounds its build in the sandbox, never past the runner's own limits", () => {
  const limits = (resources: RunnerJobView['resources']) => jobLimits(claimedJob({ resources }), SETTINGS);
  assert.equal(limits(null), undefined, 'no resources: the sandbox settings');
  assert.equal(limits({ cpu: null, memory_mb: null, cpu_limit: null, memory_limit_mb: null }), undefined);
  assert.deepEqual(limits({ cpu: 0.5, memory_mb: 512, cpu_limit: null, memory_limit_mb: null }), {
    memoryMb: 1024,
    cpus: 1,
    memorySource: 'twice resource_spec.memory_mb',
  });
  assert.deepEqual(limits({ cpu: 0.25, memory_mb: 512, cpu_limit: 0.5, memory_limit_mb: 768 }), {
    memoryMb: 768,
    cpus: 0.5,
    memorySource: 'resource_spec.memory_limit_mb',
  });
  // A member may not give a build more of the runner's machine than its operator allows.
  assert.deepEqual(limits({ cpu: 8, memory_mb: 65536, cpu_limit: 16, memory_limit_mb: 131072 }), {
    memoryMb: 4096,
    cpus: 2,
    memorySource: 'BERTH_BUILD_MEMORY_MB',
  });
});

test(
  'a build stopped mid-fetch (as the runner stops one past its build_timeout_seconds, job.ts) ends then and leaves no build directory',
  { timeout: deadline(60_000) },
  async (t) => {
    // A git server that takes the connection and never answers: the fetch hangs until it is
    // stopped, which the test does once the fetch has connected (as job.ts does at the timeout;
    // a fixed 2 s let a busy machine stop the build before it had even connected).
    const connections: net.Socket[] = [];
    const stop = new AbortController();
    let stoppedAt = 0;
    const silent = net.createServer((socket) => {
      connections.push(socket);
      stoppedAt ||= Date.now();
      stop.abort(new Error('the build ran past its build_timeout_seconds'));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-runner-timeout-'));
    t.after(() => {
      for (const socket of connections) socket.destroy();
      silent.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const config = loadRunnerConfig({
      ...containersEnv(),
      BERTH_URL: 'http://127.0.0.1:9',
      BERTH_RUNNER_KEY: 'berth_key',
      BERTH_RUNNER_DATA_DIR: dataDir,
      BERTH_RUNNER_BUILDER: 'buildah',
      BERTH_BUILD_SANDBOX: 'off',
    });
    const job = claimedJob({ build_timeout_seconds: 2, push: null });
    const lines: string[] = [];
    const step: StepContext = { signal: stop.signal, log: async (_level, message) => void lines.push(message) };
    const port = (silent.address() as net.AddressInfo).port;
    const built = langGraphDriverFor(config)(job).build(
      {
        workspaceId: job.workspace_id,
        deploymentId: job.deployment_id,
        deploymentName: job.deployment_name,
        revisionId: job.revision_id,
        source: { kind: 'git', url: `http://127.0.0.1:${port}/acme/agent.git`, ref: 'main' },
        graphConfigPath: 'langgraph.json',
        installCommand: null,
        buildCommand: null,
      },
      step,
    );
    await assert.rejects(built);
    assert.ok(connections.length > 0, `the build was fetching when it was stopped:\n${lines.join('\n')}`);
    assert.ok(Date.now() - stoppedAt < deadline(30_000), 'stopped when told, not when git gave up');
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'builds')), [], 'the build directory is removed');
  },
);

test(
  'berth builder refuses to start when the host cannot provide the build sandbox, and starts unconfined with BERTH_BUILD_SANDBOX=off',
  { timeout: deadline(60_000) },
  async (t) => {
    const key = `berth_${randomBytes(16).toString('hex')}`;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-runner-'));
    t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    // Nothing listens on port 9: the runner that starts keeps asking, which is all this needs.
    const env = {
      ...containersEnv(),
      BERTH_URL: 'http://127.0.0.1:9',
      BERTH_RUNNER_KEY: key,
      BERTH_RUNNER_DATA_DIR: dataDir,
      BERTH_RUNNER_BUILDER: 'buildah',
      BERTH_BUILD_USER: 'berth-no-such-build-user',
      BERTH_BUILD_DIR: path.join(dataDir, 'builds'),
    };
    const args = [...nodeArguments('src/main.ts'), 'builder'];
    const refused = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(refused.status, 2, refused.stderr);
    // Not root: that; root: the missing build user. Either way the sandbox is named, and how to do without it.
    assert.match(refused.stderr, /^berth builder cannot start: Builds run in a sandbox \(BERTH_BUILD_SANDBOX=on\) that this host cannot provide: /);
    assert.match(refused.stderr, process.getuid?.() === 0 ? /berth-no-such-build-user/ : /BERTH_BUILD_SANDBOX=off/);
    assert.ok(!refused.stderr.includes(key) && !refused.stdout.includes(key));

    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...env, BERTH_BUILD_SANDBOX: 'off' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    t.after(() => child.kill('SIGKILL'));
    const output: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    await eventually(async () => output.join('').includes('berth builder is running') || child.exitCode !== null, 'the unconfined runner started', 60_000);
    assert.match(output.join(''), /BERTH_BUILD_SANDBOX=off: builds run unconfined/);
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700, 'its data directory is its own');
    child.kill('SIGTERM');
    assert.equal(await exited, 0, output.join(''));
    assert.ok(!output.join('').includes(key));
  },
);
