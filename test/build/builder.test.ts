import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BuildError, buildImage, detectBuilder, pushImage, removeImage, type ResolvedBuilder } from '../../src/image-builds/builder.js';
import {
  buildTestAgentImage,
  committedLayers,
  containersEnv,
  imageExists,
  liveProcessesWith,
  removeImages,
  runOk,
  startRegistry,
  workingContainerIds,
} from './helpers.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';

// The busybox image of the other container tests: a base that needs no network.
const BASE = 'localhost/berth-test-agent:v1';

describe('image builder', () => {
  holdMachineTurnForSuite({ before, after });
  let builder: ResolvedBuilder;
  let context: string;
  const images: string[] = [];
  const newTag = () => {
    const tag = `localhost/berth-test/builder-${randomUUID().slice(0, 8)}:1`;
    images.push(tag);
    return tag;
  };

  before(async () => {
    await buildTestAgentImage(BASE);
    const found = await detectBuilder('auto', containersEnv());
    assert.equal(typeof found, 'object', `no builder: ${String(found)}`);
    builder = found as ResolvedBuilder;
    context = await mkdtemp(path.join(os.tmpdir(), 'berth-test-context-'));
    await writeFile(path.join(context, 'hello.txt'), 'hello from the context\n');
  });

  after(async () => {
    await removeImages(...images);
    await rm(context, { recursive: true, force: true });
  });

  test('auto picks buildah here; a builder that cannot build says why', async () => {
    assert.equal(builder.kind, 'buildah');
    // The docker client is installed but has no daemon to build with.
    const docker = await detectBuilder('docker', containersEnv());
    assert.equal(typeof docker, 'string');
    assert.match(docker as string, /docker is installed .* but `docker version` failed/);
    const none = await detectBuilder('auto', { ...containersEnv(), PATH: '/nonexistent' });
    assert.match(none as string, /No image builder found: none of buildah, podman, docker is on PATH\. Install buildah/);
  });

  test('streams every output line, stdout and stderr, as it comes, and returns the image id', async () => {
    const lines: string[] = [];
    const tag = newTag();
    // The comment makes the RUN step this run's own: an identical step another run left in the
    // layer cache would be reused, and print nothing, the first time too.
    const dockerfile = `FROM ${BASE}\nCOPY hello.txt /hello.txt\nRUN cat /hello.txt && echo "to stderr" >&2 && echo "back on stdout" # run ${randomUUID()}\n`;
    const built = await buildImage(builder, { contextDir: context, dockerfile, tag, log: (line) => void lines.push(line) });

    assert.equal(built.image, tag);
    const inspected = (await runOk('buildah', ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', tag])).trim();
    assert.equal(built.id, inspected);
    // Lines of one stream keep their order, and each step's output sits between its STEP
    // line and the next. (buildah relays a RUN step's stdout and stderr separately, so
    // their order relative to each other is not fixed.)
    const at = (line: string) => lines.indexOf(line);
    const step = lines.findIndex((line) => line.startsWith('STEP 3/3: RUN cat /hello.txt'));
    const commit = lines.findIndex((line) => line.startsWith('COMMIT '));
    for (const line of ['hello from the context', 'to stderr', 'back on stdout']) {
      assert.ok(at(line) > step && at(line) < commit, `"${line}" is not among the step's output:\n${lines.join('\n')}`);
    }
    assert.ok(at('hello from the context') < at('back on stdout'), lines.join('\n'));
    assert.ok(step > lines.findIndex((line) => line.startsWith('STEP 2/3: COPY hello.txt')));

    // Unchanged steps come from the layer cache the second time.
    const again: string[] = [];
    await buildImage(builder, { contextDir: context, dockerfile, tag, log: (line) => void again.push(line) });
    assert.ok(
      again.some((line) => line.startsWith('--> Using cache')),
      `no cached step in:\n${again.join('\n')}`,
    );
    assert.ok(!again.includes('to stderr'), 'the cached RUN step ran again');
  });

  test('named build contexts besides the main one reach COPY --from', async () => {
    const extra = await mkdtemp(path.join(os.tmpdir(), 'berth-test-context-'));
    try {
      // Unique, so that no layer cached by an earlier run stands in for the RUN whose output is checked.
      const shared = `from the shared library ${randomUUID()}`;
      await writeFile(path.join(extra, 'shared.txt'), `${shared}\n`);
      const lines: string[] = [];
      await buildImage(builder, {
        contextDir: context,
        dockerfile: `FROM ${BASE}\nCOPY --from=shared-lib shared.txt /shared.txt\nRUN cat /shared.txt\n`,
        additionalContexts: new Map([['shared-lib', extra]]),
        tag: newTag(),
        log: (line) => void lines.push(line),
      });
      assert.ok(lines.includes(shared), lines.join('\n'));
    } finally {
      await rm(extra, { recursive: true, force: true });
    }
  });

  test('a failing RUN step: its output reaches the log, the error names the step and exit code, nothing half-built stays', async () => {
    const lines: string[] = [];
    const before = await workingContainerIds();
    const dockerfile = `FROM ${BASE}\nRUN echo "${randomUUID()}" > /prepared\nRUN echo "installing things" && echo "fatal: the thing is broken" >&2 && exit 7\n`;
    const failure = await buildImage(builder, { contextDir: context, dockerfile, tag: newTag(), log: (line) => void lines.push(line) }).then(
      () => assert.fail('the build succeeded'),
      (error: unknown) => error,
    );

    assert.ok(failure instanceof BuildError);
    assert.equal(failure.kind, 'failed');
    assert.ok(lines.includes('installing things') && lines.includes('fatal: the thing is broken'), lines.join('\n'));
    assert.match(failure.message, /^The image build failed at `RUN echo "installing things" .*` \(exit code 7\)\. Last output: /);
    assert.ok(failure.message.includes('installing things') && failure.message.includes('fatal: the thing is broken'), failure.message);
    const left = [...(await workingContainerIds())].filter((id) => !before.has(id));
    assert.deepEqual(left, []);
    const layers = committedLayers(lines);
    assert.equal(layers.length, 1, lines.join('\n'));
    assert.equal(await imageExists(layers[0] ?? ''), false, "the completed step's intermediate image stayed");
  });

  test('a base image that is not here: the error says how to build it', async () => {
    const failure = await buildImage(builder, {
      contextDir: context,
      dockerfile: 'FROM localhost/berth/no-such-base:20\nRUN true\n',
      tag: newTag(),
      log: () => {},
    }).catch((error: unknown) => error);
    assert.ok(failure instanceof BuildError);
    assert.match(
      failure.message,
      /the base image localhost\/berth\/no-such-base:20 is not on this machine and could not be pulled .* scripts\/build-base-images\.sh/,
    );
  });

  for (const [name, stopGraceMs] of [
    ['stopping gracefully (SIGTERM)', undefined],
    ['killed at once (SIGKILL), leftovers removed by Berth', 0],
  ] as const) {
    test(`abort mid-build, ${name}: no builder process and no working container is left`, async () => {
      const marker = String(3000 + Math.floor(Math.random() * 6000));
      const before = await workingContainerIds();
      const tmpBefore = await readdir(os.tmpdir());
      const controller = new AbortController();
      const lines: string[] = [];
      const dockerfile = `FROM ${BASE}\nRUN echo started ${marker}\nRUN echo "sleeping ${marker}" && sleep ${marker}\n`;
      const building = buildImage(builder, {
        contextDir: context,
        dockerfile,
        tag: newTag(),
        signal: controller.signal,
        stopGraceMs,
        log: (line) => {
          lines.push(line);
          if (line === `sleeping ${marker}`) controller.abort(new Error('the revision was interrupted'));
        },
      });
      const failure = await building.catch((error: unknown) => error);

      assert.ok(failure instanceof BuildError, String(failure));
      assert.equal(failure.kind, 'aborted');
      assert.equal(failure.message, `The build of ${images.at(-1)} was stopped (the revision was interrupted).`);
      assert.deepEqual(await liveProcessesWith(`sleep ${marker}`), [], 'the RUN step still runs');
      const left = [...(await workingContainerIds())].filter((id) => !before.has(id));
      assert.deepEqual(left, [], 'working containers were left behind');
      const tmpAfter = (await readdir(os.tmpdir())).filter((entry) => entry.startsWith('berth-build-') && !tmpBefore.includes(entry));
      assert.deepEqual(tmpAfter, [], 'the scratch directory was left behind');
      const layers = committedLayers(lines);
      assert.equal(layers.length, 1, lines.join('\n'));
      assert.equal(await imageExists(layers[0] ?? ''), false, "the completed step's intermediate image stayed");
    });
  }

  test('podman build works the same way: it builds, and an abort leaves no process, container or layer behind', async () => {
    const podman = await detectBuilder('podman', containersEnv());
    assert.equal(typeof podman, 'object', `podman cannot build: ${String(podman)}`);
    const viaPodman = podman as ResolvedBuilder;
    assert.equal(viaPodman.kind, 'podman');
    const lines: string[] = [];
    const tag = newTag();
    const built = await buildImage(viaPodman, {
      contextDir: context,
      dockerfile: `FROM ${BASE}\nRUN echo "built by podman"\n`,
      tag,
      log: (line) => void lines.push(line),
    });
    assert.ok(lines.includes('built by podman'), lines.join('\n'));
    assert.equal(built.id, (await runOk('podman', ['image', 'inspect', '--format', '{{.Id}}', tag])).trim());

    const marker = String(3000 + Math.floor(Math.random() * 6000));
    const controller = new AbortController();
    const before = await workingContainerIds();
    lines.length = 0;
    const failure = await buildImage(viaPodman, {
      contextDir: context,
      dockerfile: `FROM ${BASE}\nRUN echo prepared ${marker} > /prepared\nRUN echo "sleeping ${marker}" && sleep ${marker}\n`,
      tag: newTag(),
      signal: controller.signal,
      log: (line) => {
        lines.push(line);
        if (line === `sleeping ${marker}`) controller.abort(new Error('stopped by the test'));
      },
    }).catch((error: unknown) => error);
    assert.ok(failure instanceof BuildError && failure.kind === 'aborted', String(failure));
    assert.deepEqual(await liveProcessesWith(`sleep ${marker}`), []);
    assert.deepEqual(
      [...(await workingContainerIds())].filter((id) => !before.has(id)),
      [],
    );
    const layers = committedLayers(lines);
    assert.equal(layers.length, 1, lines.join('\n'));
    assert.equal(await imageExists(layers[0] ?? ''), false);
  });

  test('pushes to a plain-HTTP registry on 127.0.0.1 with credentials that never reach the log', async () => {
    const user = { username: 'berth-ci', password: `pw-${randomUUID()}` };
    const registry = await startRegistry(user);
    try {
      const tag = newTag();
      await buildImage(builder, { contextDir: context, dockerfile: `FROM ${BASE}\nCOPY hello.txt /hello.txt\n`, tag, log: () => {} });
      const destination = `${registry.address}/berth-test/pushed:1`;
      const lines: string[] = [];
      const log = (line: string) => void lines.push(line);

      const anonymous = await pushImage(builder, tag, { tlsVerify: false, destination }, log).catch((error: unknown) => error);
      assert.ok(anonymous instanceof BuildError);
      assert.match(anonymous.message, /requires credentials and none were given/);

      const withTls = await pushImage(builder, tag, { tlsVerify: true, destination, credentials: user }, log).catch((error: unknown) => error);
      assert.ok(withTls instanceof BuildError);
      assert.match(withTls.message, /speaks plain HTTP\. Push with TLS verification off \(tlsVerify: false\)/);

      const pushed = await pushImage(builder, tag, { tlsVerify: false, destination, credentials: user }, log);
      assert.equal(pushed.image, destination);
      assert.match(pushed.digest ?? '', /^sha256:[0-9a-f]{64}$/);
      const remote = JSON.parse(
        await runOk('skopeo', ['inspect', '--tls-verify=false', '--creds', `${user.username}:${user.password}`, `docker://${destination}`]),
      ) as { Digest: string };
      assert.equal(remote.Digest, pushed.digest);
      assert.ok(!lines.some((line) => line.includes(user.password)), 'the password reached the log');
    } finally {
      await registry.stop();
    }
  });

  test('removeImage removes a built image and reports one that is not there', async () => {
    const tag = newTag();
    await buildImage(builder, { contextDir: context, dockerfile: `FROM ${BASE}\nRUN echo removable\n`, tag, log: () => {} });
    assert.equal(await removeImage(builder, tag), true);
    assert.equal(await removeImage(builder, tag), false);
  });
});
