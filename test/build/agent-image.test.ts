import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { Client } from '@langchain/langgraph-sdk';
import { BuildError, buildImage, detectBuilder, type ResolvedBuilder } from '../../src/image-builds/builder.js';
import { generateDockerfile } from '../../src/langgraph-project/dockerfile.js';
import { readLangGraphConfigFile } from '../../src/langgraph-project/langgraph-config.js';
import { freePort } from '../support/process.js';
import { ROOT, containersEnv, removeContainers, removeImages, run, runOk, waitForOk } from './helpers.js';
import { BUILD_TEST_BASE_IMAGE, TEST_BASE_IMAGE_NODE } from '../support/base-image.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { deadline } from '../support/deadline.js';

const BASE_IMAGE = `${TEST_BASE_IMAGE_NODE}:20`;
const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');
/** Under load (two cores shared with other builds) a cold start can take a while. */
const OK_TIMEOUT_MS = deadline(120_000);

/**
 * A Dockerfile of the shape the LangGraph CLI writes for a JavaScript project
 * (langgraph_cli/config.py, node_config_to_docker), written out by hand for now.
 */
function cliShapedDockerfile(projectDir: string, graphs: Record<string, string>, installCommand: string): string {
  return [
    `FROM ${BASE_IMAGE}`,
    '',
    '',
    '',
    `ADD . /deps/${projectDir}`,
    '',
    `WORKDIR /deps/${projectDir}`,
    '',
    `RUN ${installCommand}`,
    '',
    `ENV LANGSERVE_GRAPHS='${JSON.stringify(graphs)}'`,
    '',
    `WORKDIR /deps/${projectDir}`,
    '',
    'RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts',
  ].join('\n');
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('LangGraph.js agent image on the local base image', () => {
  holdMachineTurnForSuite({ before, after });
  let builder: ResolvedBuilder;
  let work: string;
  const images: string[] = [];
  const containers: string[] = [];

  before(
    async () => {
      const started = Date.now();
      const script = await run('bash', BUILD_TEST_BASE_IMAGE, 15 * 60_000);
      assert.equal(script.code, 0, `scripts/build-base-images.sh failed:\n${script.stderr}`);
      process.stderr.write(`# base image ready in ${seconds(Date.now() - started)}: ${script.stderr.trim().split('\n').at(-1)}\n`);
      const found = await detectBuilder('auto', containersEnv());
      assert.equal(typeof found, 'object', `no builder: ${String(found)}`);
      builder = found as ResolvedBuilder;
      work = await mkdtemp(path.join(os.tmpdir(), 'berth-test-agent-'));
    },
    { timeout: deadline(16 * 60_000) },
  );

  after(async () => {
    await removeContainers(...containers);
    await removeImages(...images);
    await rm(work, { recursive: true, force: true });
  });

  async function runAgent(image: string): Promise<{ url: string; name: string; startMs: number }> {
    const name = `berth-test-echo-${randomUUID().slice(0, 8)}`;
    const port = await freePort();
    containers.push(name);
    const started = Date.now();
    await runOk('podman', ['run', '-d', '--name', name, '--init', '-p', `127.0.0.1:${port}:8000`, image]);
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForOk(url, OK_TIMEOUT_MS);
    } catch (error) {
      const logs = await runOk('podman', ['logs', name]).catch(() => '');
      throw new Error(`${(error as Error).message}; container logs:\n${logs}`);
    }
    return { url, name, startMs: Date.now() - started };
  }

  async function ask(url: string, input: string): Promise<unknown> {
    const client = new Client({ apiUrl: url });
    const [assistant] = await client.assistants.search({ graphId: 'echo' });
    assert.ok(assistant, 'the echo graph has no assistant');
    // The schemas are read from the graph's TypeScript source at run time: the bundled server must still reach it.
    const schemas = await client.assistants.getSchemas(assistant.assistant_id);
    const stateFields = Object.keys((schemas.state_schema as { properties?: Record<string, unknown> } | null | undefined)?.properties ?? {});
    assert.deepEqual(stateFields.sort(), ['input', 'output'], `the echo graph's state schema: ${JSON.stringify(schemas)}`);
    const thread = await client.threads.create();
    const values = (await client.runs.wait(thread.thread_id, assistant.assistant_id, { input: { input } })) as { output?: unknown };
    return values.output;
  }

  /** Resident memory of the node process the container's init started. */
  async function nodeRssMb(name: string): Promise<number> {
    const initPid = (await runOk('podman', ['inspect', '--format', '{{.State.Pid}}', name])).trim();
    const children = (await readFile(`/proc/${initPid}/task/${initPid}/children`, 'utf8')).trim().split(/\s+/);
    let kb = 0;
    for (const pid of children) kb += Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return kb / 1024;
  }

  test(
    'the sample agent builds, serves /ok and answers through the SDK; after a source change it is rebuilt and answers anew',
    { timeout: deadline(20 * 60_000) },
    async (t: TestContext) => {
      const context = path.join(work, 'echo-agent');
      await cp(FIXTURE, context, { recursive: true });
      const dockerfile = cliShapedDockerfile('echo-agent', { echo: './src/graph.ts:graph' }, 'npm ci');
      const lines: string[] = [];
      const log = (line: string) => void lines.push(line);

      const tag1 = `localhost/berth-test/echo-agent:${randomUUID().slice(0, 8)}`;
      images.push(tag1);
      let started = Date.now();
      // Cold: no layer cache (an earlier run may have built the same steps).
      const first = await buildImage(builder, { contextDir: context, dockerfile, tag: tag1, log, noCache: true });
      const coldMs = Date.now() - started;
      assert.ok(lines.includes('prebuild: graph "echo" -> src/graph.ts'), lines.join('\n'));

      const one = await runAgent(first.image);
      assert.equal(await ask(one.url, 'hello'), 'echo: hello');
      const rssMb = await nodeRssMb(one.name);
      const sizeMb = Number((await runOk('podman', ['image', 'inspect', '--format', '{{.Size}}', first.image])).trim()) / 1e6;
      await removeContainers(one.name);

      // A source-only change: in the CLI's layout every step from ADD on runs again.
      const graphFile = path.join(context, 'src/graph.ts');
      await writeFile(graphFile, (await readFile(graphFile, 'utf8')).replace('`echo: ${state.input}`', '`echo again: ${state.input}`'));
      const tag2 = `localhost/berth-test/echo-agent:${randomUUID().slice(0, 8)}`;
      images.push(tag2);
      lines.length = 0;
      started = Date.now();
      const second = await buildImage(builder, { contextDir: context, dockerfile, tag: tag2, log });
      const warmMs = Date.now() - started;
      assert.notEqual(second.id, first.id);

      const two = await runAgent(second.image);
      assert.equal(await ask(two.url, 'hello'), 'echo again: hello');

      t.diagnostic(`CLI layout: cold app build ${seconds(coldMs)}, rebuild after a source change ${seconds(warmMs)}`);
      t.diagnostic(`time to /ok ${seconds(one.startMs)} (first), ${seconds(two.startMs)} (second)`);
      t.diagnostic(`app image ${sizeMb.toFixed(0)} MB, node RSS after one run ${rssMb.toFixed(0)} MB`);
    },
  );

  test(
    "Berth's cached layout (the Dockerfile generator's): a source-only change reuses the install layer",
    { timeout: deadline(20 * 60_000) },
    async (t: TestContext) => {
      const context = path.join(work, 'echo-cached');
      await cp(FIXTURE, context, { recursive: true });
      const cacheDir = await mkdtemp(path.join(work, 'build-cache-'));
      const config = await readLangGraphConfigFile(path.join(context, 'langgraph.json'));
      const generated = await generateDockerfile(config, context, { defaultBaseImages: { node: TEST_BASE_IMAGE_NODE }, layout: 'cached' });
      assert.equal(generated.layout, 'cached', generated.layoutNote);
      assert.equal(generated.image, BASE_IMAGE);
      const build = async (log: (line: string) => void) => {
        const tag = `localhost/berth-test/echo-agent:${randomUUID().slice(0, 8)}`;
        images.push(tag);
        const started = Date.now();
        const built = await buildImage(builder, { contextDir: context, dockerfile: generated.dockerfile, tag, log, cacheDir });
        return { ...built, ms: Date.now() - started };
      };

      const first = await build(() => {});
      // npm kept its downloads in the cache directory, not in the image.
      assert.ok((await readdir(cacheDir)).length > 0, 'the cache mount left nothing in cacheDir');
      const graphFile = path.join(context, 'src/graph.ts');
      await writeFile(graphFile, (await readFile(graphFile, 'utf8')).replace('`echo: ${state.input}`', '`echo, cached: ${state.input}`'));
      const lines: string[] = [];
      const second = await build((line) => void lines.push(line));

      const install = lines.findIndex((line) => / RUN --mount=type=cache,target=\/root\/\.npm npm ci$/.test(line));
      assert.ok(install >= 0 && lines[install + 1]?.startsWith('--> Using cache'), `npm ci ran again:\n${lines.join('\n')}`);
      const agent = await runAgent(second.image);
      assert.equal(await ask(agent.url, 'hello'), 'echo, cached: hello');
      const sizeMb = Number((await runOk('podman', ['image', 'inspect', '--format', '{{.Size}}', second.image])).trim()) / 1e6;
      t.diagnostic(`cached layout: first build ${seconds(first.ms)}, rebuild after a source change ${seconds(second.ms)}, image ${sizeMb.toFixed(0)} MB`);
    },
  );

  test('a graph path that does not exist fails the build at the prebuild step, naming the graph', { timeout: deadline(10 * 60_000) }, async () => {
    const context = path.join(work, 'wrong-path');
    await cp(FIXTURE, context, { recursive: true });
    const tag = `localhost/berth-test/echo-agent:${randomUUID().slice(0, 8)}`;
    images.push(tag);
    const failure = await buildImage(builder, {
      contextDir: context,
      // No install: the prebuild step checks files, not dependencies.
      dockerfile: cliShapedDockerfile('wrong-path', { echo: './src/agent.ts:graph' }, 'true'),
      tag,
      log: () => {},
    }).catch((error: unknown) => error);

    assert.ok(failure instanceof BuildError, String(failure));
    assert.match(
      failure.message,
      /^The image build failed at `RUN \(test ! -f \/api\/langgraph_api\/js\/build\.mts .*` \(exit code 1\): graph "echo": \.\/src\/agent\.ts does not exist in \/deps\/wrong-path\. Check the "graphs" paths in langgraph\.json/,
    );
  });

  test('the base image alone refuses to start without LANGSERVE_GRAPHS, saying what to set', async () => {
    const result = await run('podman', ['run', '--rm', '--init', '--network', 'none', BASE_IMAGE]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /agent server: LANGSERVE_GRAPHS is not set; it names the graphs to serve/);
  });

  test('npm ci on a lock file without optional platform packages fails with an error naming the override', { timeout: deadline(10 * 60_000) }, async () => {
    const context = path.join(work, 'platform-packages');
    await cp(FIXTURE, context, { recursive: true });
    // What a lock file written against this machine's registry looks like: package.json asks
    // for an optional native package the registry lacks, and the lock file has no entry for it.
    const manifest = JSON.parse(await readFile(path.join(context, 'package.json'), 'utf8')) as Record<string, unknown>;
    manifest.optionalDependencies = { '@esbuild/aix-ppc64': '0.25.0' };
    await writeFile(path.join(context, 'package.json'), JSON.stringify(manifest, null, 2));
    const tag = `localhost/berth-test/echo-agent:${randomUUID().slice(0, 8)}`;
    images.push(tag);
    const lines: string[] = [];

    const failure = await buildImage(builder, {
      contextDir: context,
      dockerfile: cliShapedDockerfile('platform-packages', { echo: './src/graph.ts:graph' }, 'npm ci'),
      tag,
      log: (line) => void lines.push(line),
    }).catch((error: unknown) => error);

    assert.ok(failure instanceof BuildError, String(failure));
    assert.ok(
      lines.some((line) => line.includes('Missing: @esbuild/aix-ppc64@0.25.0 from lock file')),
      lines.join('\n'),
    );
    assert.match(
      failure.message,
      /^The image build failed at `RUN npm ci` \(exit code 1\): npm ci refused the lock file because it lacks optional platform packages \(@esbuild\/aix-ppc64\)\./,
    );
    assert.match(failure.message, /Set source_config\.install_command to "npm install"/);
  });
});
