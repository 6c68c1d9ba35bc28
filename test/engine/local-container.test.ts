import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { LocalContainerRuntime, type ResolvedRuntime } from '../../src/containers/runtime/index.js';
import { DriverError, type LogLevel, type StepContext } from '../../src/engine/drivers/types.js';
import { deadline } from '../support/deadline.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const buildScript = path.join(root, 'scripts/build-test-image.sh');

const IMAGE = 'localhost/berth-test-agent:v1';
const BROKEN = 'localhost/berth-test-agent:broken';
const UNHEALTHY = 'localhost/berth-test-agent:unhealthy';
const SECRET_NAME = 'BERTH_TEST_SECRET';
const SECRET_VALUE = `s3cret-${randomUUID()}`;
const MULTILINE_VALUE = `-----BEGIN KEY-----\n${randomUUID()}\n-----END KEY-----`;
const TRICKY_VALUE = ` "quoted" 'single' #not-a-comment = $HOME \\ `;
const BIG_VALUE = 'b'.repeat(100 * 1024);

interface RecordingContext extends StepContext {
  lines: { level: LogLevel; message: string }[];
  text(): string;
}

function stepContext(signal: AbortSignal = new AbortController().signal): RecordingContext {
  const lines: { level: LogLevel; message: string }[] = [];
  return {
    signal,
    lines,
    async log(level, message) {
      lines.push({ level, message });
    },
    text: () => lines.map((line) => `${line.level} ${line.message}`).join('\n'),
  };
}

function onPath(binary: string): Promise<boolean> {
  return run('sh', ['-c', `command -v ${binary}`]).then(
    () => true,
    () => false,
  );
}

test('unavailableReason names what to install and the listener alternative when the runtime is absent', async () => {
  const empty = await mkdtemp(path.join(os.tmpdir(), 'berth-empty-path-'));
  try {
    const docker = await new LocalContainerRuntime({ runtime: 'docker', env: { PATH: empty } }).unavailableReason();
    assert.ok(docker, 'a docker runtime with no docker on PATH must be unavailable');
    assert.match(docker, /docker is not on PATH/);
    assert.match(docker, /apt-get install docker\.io/);
    assert.match(docker, /source_config\.listener_id/);

    const auto = await new LocalContainerRuntime({ env: { PATH: empty } }).unavailableReason();
    assert.ok(auto);
    assert.match(auto, /neither podman nor docker is on PATH/);
    assert.match(auto, /apt-get install podman/);
    assert.match(auto, /source_config\.listener_id/);

    const ctx = stepContext();
    await assert.rejects(
      new LocalContainerRuntime({ env: { PATH: empty } }).start(
        { deploymentId: 'd', revisionId: 'r', instanceName: 'x', image: IMAGE, env: {}, resources: {} },
        ctx,
      ),
      (error: unknown) => error instanceof DriverError && /apt-get install podman/.test(error.message),
    );
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});

const probe = new LocalContainerRuntime();
const unavailable = await probe.unavailableReason();
// A broken podman is a setup bug CI must see; only a machine without one skips.
const skip = unavailable && !(await onPath('podman')) ? unavailable : null;
if (skip) process.stdout.write(`# SKIP local container runtime: ${skip}\n`);

describe('local container runtime (real containers)', { skip: skip ?? false }, () => {
  let runtime: ResolvedRuntime;
  const deployments: string[] = [];

  const rt = async (...args: string[]) => (await run(runtime.binary, args, { env: runtime.env })).stdout;
  const containersOf = async (deploymentId: string) =>
    (await rt('ps', '-a', '--filter', `label=berth.deployment=${deploymentId}`, '--format', '{{.Names}}')).split('\n').filter(Boolean);
  const newDeployment = () => {
    const id = `test-${randomUUID()}`;
    deployments.push(id);
    return id;
  };

  before(async () => {
    if (unavailable) throw new Error(`podman is installed but not usable: ${unavailable}`);
    const resolved = await probe.resolvedRuntime();
    assert.ok(resolved);
    runtime = resolved;
    for (const [image, flag] of [
      [IMAGE, []],
      [BROKEN, ['--broken']],
      [UNHEALTHY, ['--unhealthy']],
    ] as const) {
      await run(buildScript, [image, ...flag], { env: runtime.env });
    }
  });

  after(async () => {
    // Whatever a failed assertion left behind.
    for (const id of deployments) {
      const names = await containersOf(id).catch(() => []);
      if (names.length > 0) await rt('rm', '-f', '-t', '0', ...names).catch(() => undefined);
    }
  });

  test('start serves /ok with the secrets as environment, which never reach argv or logs; retire removes it', async () => {
    // A wrapper on PATH records every command line the driver runs, and the env file's mode.
    const spyDir = await mkdtemp(path.join(os.tmpdir(), 'berth-spy-'));
    const argvLog = path.join(spyDir, 'argv.log');
    await writeFile(
      path.join(spyDir, runtime.kind),
      `#!/bin/sh
printf '%s\\n' "$*" >> '${argvLog}'
prev=
for arg in "$@"; do
  if [ "$prev" = --env-file ]; then echo "env-file-mode $(stat -c %a "$arg")" >> '${argvLog}'; echo "env-file-path $arg" >> '${argvLog}'; fi
  prev=$arg
done
exec '${runtime.binary}' "$@"
`,
    );
    await chmod(path.join(spyDir, runtime.kind), 0o755);
    const driver = new LocalContainerRuntime({ runtime: runtime.kind, env: { ...runtime.env, PATH: `${spyDir}:${runtime.env.PATH}` } });
    const deploymentId = newDeployment();
    const revisionId = randomUUID();
    const ctx = stepContext();

    try {
      const started = Date.now();
      const running = await driver.start(
        {
          deploymentId,
          revisionId,
          instanceName: 'Secret Agent',
          image: IMAGE,
          env: { [SECRET_NAME]: SECRET_VALUE, PEM_KEY: MULTILINE_VALUE, PLAIN: 'x', TRICKY: TRICKY_VALUE, BIG: BIG_VALUE },
          resources: { cpu: 0.5, memoryMb: 128 },
        },
        ctx,
      );
      process.stdout.write(`# healthy start took ${Date.now() - started} ms\n`);
      assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(running.handle, `berth-secret-agent-${revisionId.slice(0, 8)}`);

      const ok = await fetch(`${running.url}/ok`);
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { ok: true });
      const names = (await (await fetch(`${running.url}/env-names`)).text()).split('\n');
      for (const name of [SECRET_NAME, 'PEM_KEY', 'PLAIN', 'PORT']) assert.ok(names.includes(name), `${name} missing from ${names.join(',')}`);
      assert.equal((await fetch(`${running.url}/env`)).status, 404);

      // Inside the runtime the values are intact, including the multi-line one.
      const env = JSON.parse(await rt('container', 'inspect', '--format', '{{json .Config.Env}}', running.handle)) as string[];
      assert.ok(env.includes(`${SECRET_NAME}=${SECRET_VALUE}`));
      assert.ok(env.includes(`PEM_KEY=${MULTILINE_VALUE}`));
      assert.ok(env.includes(`TRICKY=${TRICKY_VALUE}`), 'quotes, # and surrounding spaces must arrive verbatim');
      assert.ok(env.includes(`BIG=${BIG_VALUE}`));
      assert.ok(env.includes('PORT=8000'), 'the server listens on 8000 inside its own network namespace');
      const published = (await rt('container', 'port', running.handle)).trim();
      assert.equal(published, `8000/tcp -> 127.0.0.1:${new URL(running.url).port}`, 'published on loopback only');
      const labels = JSON.parse(await rt('container', 'inspect', '--format', '{{json .Config.Labels}}', running.handle)) as Record<string, string>;
      assert.equal(labels['berth.deployment'], deploymentId);
      assert.equal(labels['berth.revision'], revisionId);
      const limits = (await rt('container', 'inspect', '--format', '{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}', running.handle)).trim();
      assert.equal(limits, `${128 * 1024 * 1024} ${0.5e9}`);

      if (runtime.kind === 'podman') {
        const createCommand = await rt('container', 'inspect', '--format', '{{.Config.CreateCommand}}', running.handle);
        assert.match(createCommand, /--env-file/);
        assert.ok(!createCommand.includes(SECRET_VALUE), 'the secret value is in the recorded create command');
        assert.ok(!createCommand.includes('BEGIN KEY'), 'the multi-line value is in the recorded create command');
      }
      const argv = await readFile(argvLog, 'utf8');
      assert.match(argv, /^run -d --name /m);
      assert.ok(!argv.includes(SECRET_VALUE) && !argv.includes('BEGIN KEY') && !argv.includes('bbbbbbbb'), 'a value reached argv');
      assert.match(argv, /^env-file-mode 600$/m);
      const envFile = /^env-file-path (.+)$/m.exec(argv)?.[1];
      assert.ok(envFile);
      await assert.rejects(readFile(envFile), { code: 'ENOENT' }, 'the env file outlived the run command');
      // Other test files start containers at the same time, so look at this run's own directory only.
      await assert.rejects(readdir(path.dirname(envFile)), { code: 'ENOENT' }, 'the env file directory outlived the run command');

      assert.ok(!ctx.text().includes(SECRET_VALUE));
      assert.match(ctx.text(), /Starting container/);
      assert.match(ctx.text(), /Waiting for GET \/ok/);
      assert.match(ctx.text(), /Healthy after \d+\.\d s/);

      await driver.retire(running.handle, ctx);
      assert.deepEqual(await containersOf(deploymentId), []);
      await assert.rejects(fetch(`${running.url}/ok`));
      await driver.retire(running.handle, ctx);
    } finally {
      await rm(spyDir, { recursive: true, force: true });
    }
  });

  test('teardown removes every container of the deployment and nothing else', async () => {
    const driver = new LocalContainerRuntime({ env: runtime.env });
    const ctx = stepContext();
    const deploymentId = newDeployment();
    const otherId = newDeployment();
    const request = (id: string) => ({ deploymentId: id, revisionId: randomUUID(), instanceName: 'td', image: IMAGE, env: {}, resources: {} });
    const [a, b, other] = await Promise.all([
      driver.start(request(deploymentId), ctx),
      driver.start(request(deploymentId), ctx),
      driver.start(request(otherId), ctx),
    ]);
    assert.notEqual(a.url, b.url);
    assert.equal((await containersOf(deploymentId)).length, 2);

    await driver.teardown(deploymentId, ctx);
    assert.deepEqual(await containersOf(deploymentId), []);
    assert.deepEqual(await containersOf(otherId), [other.handle]);
    assert.equal((await fetch(`${other.url}/ok`)).status, 200);

    await driver.teardown(deploymentId, ctx);
    await driver.teardown(otherId, ctx);
    assert.deepEqual(await containersOf(otherId), []);
  });

  test('a container left by an interrupted attempt at the same revision is replaced', async () => {
    const driver = new LocalContainerRuntime({ env: runtime.env });
    const deploymentId = newDeployment();
    const revisionId = randomUUID();
    const name = `berth-again-${revisionId.slice(0, 8)}`;
    await rt('create', '--name', name, '--label', `berth.deployment=${deploymentId}`, '--network', 'host', IMAGE);
    const ctx = stepContext();
    const running = await driver.start({ deploymentId, revisionId, instanceName: 'again', image: IMAGE, env: {}, resources: {} }, ctx);
    assert.equal(running.handle, name);
    assert.match(ctx.text(), /left over from an earlier attempt/);
    assert.equal((await fetch(`${running.url}/ok`)).status, 200);
    await driver.teardown(deploymentId, ctx);
  });

  test('an image whose server exits fails with the exit code, its output in the log, and no container left', async () => {
    const healthTimeoutMs = deadline(20_000);
    const driver = new LocalContainerRuntime({ env: runtime.env, healthTimeoutMs });
    const deploymentId = newDeployment();
    const ctx = stepContext();
    const started = Date.now();
    await assert.rejects(
      driver.start({ deploymentId, revisionId: randomUUID(), instanceName: 'broken', image: BROKEN, env: { [SECRET_NAME]: SECRET_VALUE }, resources: {} }, ctx),
      (error: unknown) => {
        assert.ok(error instanceof DriverError);
        assert.match(error.message, /The container exited with code 3 before answering GET \/ok on port \d+; see the deploy logs/);
        assert.ok(!error.message.includes(SECRET_VALUE));
        return true;
      },
    );
    assert.ok(Date.now() - started < healthTimeoutMs / 2, 'an exited container must be noticed without waiting for the health timeout');
    assert.ok(ctx.lines.some((line) => line.level === 'ERROR' && line.message.includes('fatal: test agent built with --broken')));
    assert.ok(ctx.lines.some((line) => line.level === 'INFO' && line.message.includes(`env names:`) && line.message.includes(SECRET_NAME)));
    assert.ok(!ctx.text().includes(SECRET_VALUE));
    assert.deepEqual(await containersOf(deploymentId), []);
  });

  test('a server that never answers /ok with 200 fails at the health timeout with no container left', async () => {
    const driver = new LocalContainerRuntime({ env: runtime.env, healthTimeoutMs: 2_000 });
    const deploymentId = newDeployment();
    const ctx = stepContext();
    await assert.rejects(
      driver.start({ deploymentId, revisionId: randomUUID(), instanceName: 'unhealthy', image: UNHEALTHY, env: {}, resources: {} }, ctx),
      (error: unknown) =>
        error instanceof DriverError && /did not answer GET \/ok with 200 on port \d+ within 2\.0 s \(last attempt: HTTP 404\)/.test(error.message),
    );
    assert.match(ctx.text(), /without \/ok/);
    assert.deepEqual(await containersOf(deploymentId), []);
  });

  test('a server that answers /ok but cannot list the graphs of its configuration gets no traffic, with no container left', async () => {
    // The busybox server serves /ok but no POST /assistants/search: an agent server that lists no graphs.
    const driver = new LocalContainerRuntime({ env: runtime.env, healthTimeoutMs: deadline(30_000) });
    const deploymentId = newDeployment();
    const ctx = stepContext();
    const graphs = JSON.stringify({ echo: './src/graph.ts:graph' });
    await assert.rejects(
      driver.start(
        {
          deploymentId,
          revisionId: randomUUID(),
          instanceName: 'nographs',
          image: IMAGE,
          env: { LANGSERVE_GRAPHS: graphs, [SECRET_NAME]: SECRET_VALUE },
          resources: {},
        },
        ctx,
      ),
      (error: unknown) => {
        assert.ok(error instanceof DriverError);
        assert.match(
          error.message,
          /answered GET \/ok but POST \/assistants\/search answered HTTP \d+, so its graphs could not be checked; no traffic was sent/,
        );
        assert.match(error.message, /The container's last lines:\n.*listening on 0\.0\.0\.0:8000/s);
        assert.ok(!error.message.includes(SECRET_VALUE));
        return true;
      },
    );
    assert.deepEqual(await containersOf(deploymentId), []);
  });

  test('an image that does not exist fails naming the image, with no container left', async () => {
    const driver = new LocalContainerRuntime({ env: runtime.env });
    const deploymentId = newDeployment();
    const image = `localhost/berth-test-missing-${randomUUID().slice(0, 8)}:v0`;
    const ctx = stepContext();
    await assert.rejects(
      driver.start({ deploymentId, revisionId: randomUUID(), instanceName: 'missing', image, env: {}, resources: {} }, ctx),
      (error: unknown) => error instanceof DriverError && error.message.startsWith(`Image '${image}' was not found locally and could not be pulled: `),
    );
    assert.deepEqual(await containersOf(deploymentId), []);
  });

  test('aborting the step stops waiting promptly and leaves no container', async () => {
    const driver = new LocalContainerRuntime({ env: runtime.env, healthTimeoutMs: 60_000 });
    const deploymentId = newDeployment();
    const controller = new AbortController();
    const ctx = stepContext(controller.signal);
    const original = ctx.log;
    let abortedAt = 0;
    ctx.log = async (level, message) => {
      await original(level, message);
      if (message.startsWith('Waiting for GET /ok')) {
        setTimeout(() => {
          abortedAt = Date.now();
          controller.abort(new Error('step timeout'));
        }, 300);
      }
    };
    await assert.rejects(
      driver.start({ deploymentId, revisionId: randomUUID(), instanceName: 'abort', image: UNHEALTHY, env: {}, resources: {} }, ctx),
      (error: unknown) => error instanceof DriverError && /cancelled \(step timeout\)/.test(error.message),
    );
    assert.ok(abortedAt > 0);
    const took = Date.now() - abortedAt;
    process.stdout.write(`# abort to rejection (including removal) took ${took} ms\n`);
    assert.ok(took < deadline(3_000), `took ${took} ms after the abort`);
    assert.deepEqual(await containersOf(deploymentId), []);
  });

  test('on the host network the container serves on a free port of the host, told by PORT', async () => {
    const driver = new LocalContainerRuntime({ env: runtime.env, healthTimeoutMs: 60_000, network: 'host' });
    const deploymentId = newDeployment();
    const running = await driver.start(
      { deploymentId, revisionId: randomUUID(), instanceName: 'hostnet', image: IMAGE, env: {}, resources: {} },
      stepContext(),
    );
    try {
      assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await fetch(`${running.url}/ok`)).status, 200);
      assert.equal((await rt('inspect', '--format', '{{.HostConfig.NetworkMode}}', running.handle)).trim(), 'host');
      const port = new URL(running.url).port;
      const envNames = await (await fetch(`${running.url}/env-names`)).text();
      assert.match(envNames, /^PORT$/m);
      assert.ok(port.length > 0);
    } finally {
      await driver.retire(running.handle, stepContext());
    }
    assert.deepEqual(await containersOf(deploymentId), []);
  });
});
