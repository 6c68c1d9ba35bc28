import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runCommand } from '../support/commands.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { freePort } from '../support/process.js';
import { eventually } from '../support/runtimes.js';
import { deadline } from '../support/deadline.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CONTAINERS_ENV = {
  ...process.env,
  CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? '/etc/berth/containers.conf',
  CONTAINERS_REGISTRIES_CONF: process.env.CONTAINERS_REGISTRIES_CONF ?? '/etc/berth/registries.conf',
};
const NODE_IMAGE = 'localhost/berth/node:20';
const NODE_BUILD_IMAGE = 'localhost/berth/node:20-build';

// The turn is taken before the test starts, so a wait for it does not count against the build.
holdMachineTurnForSuite({ before, after });

// Building compiles better-sqlite3 inside the build stage (about a minute and a half on two
// cores) and installs from the npm registry: minutes, not seconds.
test('the Dockerfile builds an image that serves /ok and the API as an unprivileged user, and stops cleanly', { timeout: deadline(20 * 60_000) }, async (t) => {
  const signal = AbortSignal.timeout(deadline(19 * 60_000));
  const suffix = randomBytes(4).toString('hex');
  const image = `localhost/berth-test/berth:${suffix}`;
  const container = `berth-image-test-${suffix}`;
  const key = `berth_image_test_${randomBytes(24).toString('hex')}`;
  const run = (command: string, args: string[], env: NodeJS.ProcessEnv = CONTAINERS_ENV) => runCommand(command, args, { signal, env, cwd: ROOT });

  // The test's own hook runs before the file's `after` gives the machine turn back.
  t.after(async () => {
    await runCommand('podman', ['rm', '--force', '--volumes', '--time', '0', container], { env: CONTAINERS_ENV, check: false });
    await runCommand('buildah', ['rmi', '--force', image], { env: CONTAINERS_ENV, check: false });
  });

  await run('bash', ['scripts/build-node-base-image.sh', '--tag', NODE_IMAGE, '--build-tag', NODE_BUILD_IMAGE]);
  await run('buildah', [
    'bud',
    '--isolation',
    'chroot',
    '--format',
    'docker',
    // Layers are cached by each instruction and what it copies, so a run on a machine that
    // built this Dockerfile before installs and compiles the dependencies again only when
    // package.json or the lockfile changed; a changed source file still rebuilds from its COPY.
    '--layers',
    '--build-arg',
    `NODE_IMAGE=${NODE_IMAGE}`,
    '--build-arg',
    `NODE_BUILD_IMAGE=${NODE_BUILD_IMAGE}`,
    '--tag',
    image,
    '.',
  ]);

  const port = await freePort();
  // The key goes to podman through its environment, never on its command line.
  await run(
    'podman',
    ['run', '--detach', '--name', container, '--publish', `127.0.0.1:${port}:8124`, '--env', 'BERTH_BOOTSTRAP_API_KEY', '--health-interval', 'disable', image],
    { ...CONTAINERS_ENV, BERTH_BOOTSTRAP_API_KEY: key },
  );
  const base = `http://127.0.0.1:${port}`;
  try {
    await eventually(
      () =>
        fetch(`${base}/ok`).then(
          (r) => r.status === 200,
          () => false,
        ),
      'the container to answer GET /ok',
      60_000,
    );
  } catch (error) {
    const logs = await runCommand('podman', ['logs', container], { env: CONTAINERS_ENV, check: false });
    throw new Error(`${(error as Error).message}; container log:\n${logs.output.slice(-3000)}`);
  }

  const listed = await fetch(`${base}/v2/deployments`, { headers: { 'X-Api-Key': key } });
  assert.equal(listed.status, 200);
  assert.deepEqual(await listed.json(), { resources: [], offset: 0 });
  const anonymous = await fetch(`${base}/v2/deployments`);
  assert.equal(anonymous.status, 401);

  // The image's own HEALTHCHECK (node -e, no curl) passes.
  const health = await runCommand('podman', ['healthcheck', 'run', container], { signal, env: CONTAINERS_ENV, check: false });
  assert.equal(health.code, 0, `podman healthcheck run: ${health.output}`);

  const user = await run('podman', ['exec', container, 'id', '-u']);
  assert.equal(user.stdout.trim(), '10001');
  const layout = await run('podman', [
    'exec',
    container,
    'sh',
    '-c',
    'test -s /data/berth.sqlite && echo data-in-volume; test -e /app/node_modules/typescript || echo no-dev-dependencies',
  ]);
  assert.deepEqual(layout.stdout.trim().split('\n'), ['data-in-volume', 'no-dev-dependencies']);
  // The Kubernetes manifests run `berth engine` and `berth listener` from this image.
  const help = await run('podman', ['exec', container, 'berth', '--help']);
  assert.match(help.stdout, /^\s+engine\b/m);

  // Node is PID 1 and handles SIGTERM itself: `podman stop` ends it with exit code 0, not a kill.
  await run('podman', ['stop', '--time', '20', container]);
  const exit = await run('podman', ['inspect', '--format', '{{.State.ExitCode}}', container]);
  assert.equal(exit.stdout.trim(), '0');
});
