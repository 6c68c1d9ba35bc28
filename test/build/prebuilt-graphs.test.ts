// The base image's prebuild step compiles the graphs, and the agent server loads those bundles
// without tsx; whenever a bundle could differ from its source, everything loads through tsx
// as before. Real images built with buildah and run with podman.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@langchain/langgraph-sdk';
import { buildImage, detectBuilder, type ResolvedBuilder } from '../../src/image-builds/builder.js';
import { BUILD_TEST_BASE_IMAGE, TEST_BASE_IMAGE_NODE } from '../support/base-image.js';
import { deadline } from '../support/deadline.js';
import { holdMachineTurnForSuite } from '../support/machine-lock.js';
import { freePort } from '../support/process.js';
import { containersEnv, removeContainers, removeImages, ROOT, run, runOk, waitForOk } from './helpers.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');
const GRAPHS = { echo: './src/graph.ts:graph' };

/** The LangGraph CLI's Dockerfile for the echo agent, with `after` run after the prebuild step. */
function dockerfile(project: string, after: string[] = []): string {
  return [
    `FROM ${TEST_BASE_IMAGE_NODE}:20`,
    `ADD . /deps/${project}`,
    `WORKDIR /deps/${project}`,
    'RUN npm ci',
    `ENV LANGSERVE_GRAPHS='${JSON.stringify(GRAPHS)}'`,
    'RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts',
    ...after,
  ].join('\n');
}

describe('graphs compiled at image build', () => {
  holdMachineTurnForSuite({ before, after });
  let builder: ResolvedBuilder;
  let work: string;
  const images: string[] = [];
  const containers: string[] = [];

  before(
    async () => {
      const script = await run('bash', BUILD_TEST_BASE_IMAGE, 15 * 60_000);
      assert.equal(script.code, 0, `scripts/build-base-images.sh failed:\n${script.stderr}`);
      const found = await detectBuilder('auto', containersEnv());
      assert.equal(typeof found, 'object', `no builder: ${String(found)}`);
      builder = found as ResolvedBuilder;
      work = await mkdtemp(path.join(os.tmpdir(), 'berth-test-prebuilt-'));
    },
    { timeout: deadline(16 * 60_000) },
  );

  after(async () => {
    await removeContainers(...containers);
    await removeImages(...images);
    await rm(work, { recursive: true, force: true });
  });

  /** Builds the echo agent, edited by `change`, and returns its build log and the image. */
  async function build(project: string, change: (dir: string) => Promise<void>, after?: string[]): Promise<{ image: string; lines: string[] }> {
    const context = path.join(work, project);
    await cp(FIXTURE, context, { recursive: true });
    await change(context);
    const tag = `localhost/berth-test/prebuilt-${project}:${randomUUID().slice(0, 8)}`;
    // A file of its own in every context: the layers of a run stopped before its clean-up would
    // otherwise be taken from the cache, and a cached prebuild step prints nothing to check.
    await writeFile(path.join(context, '.berth-test-build'), `${tag}\n`);
    images.push(tag);
    const lines: string[] = [];
    const built = await buildImage(builder, { contextDir: context, dockerfile: dockerfile(project, after), tag, log: (line) => void lines.push(line) });
    return { image: built.image, lines };
  }

  /** Starts the image, asks the echo graph, and returns its answer, the server's log and its /info. */
  async function serve(image: string, input: string): Promise<{ answer: unknown; logs: string; info: unknown }> {
    const name = `berth-test-prebuilt-${randomUUID().slice(0, 8)}`;
    const port = await freePort();
    containers.push(name);
    await runOk('podman', ['run', '-d', '--name', name, '--init', '-p', `127.0.0.1:${port}:8000`, image]);
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForOk(url, deadline(120_000));
      const client = new Client({ apiUrl: url });
      const [assistant] = await client.assistants.search({ graphId: 'echo' });
      assert.ok(assistant, 'the echo graph has no assistant');
      const thread = await client.threads.create();
      const values = (await client.runs.wait(thread.thread_id, assistant.assistant_id, { input: { input } })) as { output?: unknown };
      const info = (await (await fetch(`${url}/info`)).json()) as unknown;
      const logs = await run('podman', ['logs', name]);
      return { answer: values.output, logs: `${logs.stdout}\n${logs.stderr}`, info };
    } finally {
      await removeContainers(name);
    }
  }

  test(
    'the sample agent is served from its bundle, without tsx; a source changed after the prebuild step is served instead',
    { timeout: deadline(20 * 60_000) },
    async () => {
      const compiled = await build('compiled', async () => {}, ['RUN sed -i "s/echo: /changed: /" src/graph.ts']);
      assert.ok(compiled.lines.includes('prebuild: graph "echo" compiled to src/.graph.ts.berth-prebuilt.mjs'), compiled.lines.join('\n'));
      const changed = await serve(compiled.image, 'hello');
      assert.equal(changed.answer, 'changed: hello', 'the changed source, not the stale bundle');
      assert.match(
        changed.logs,
        /agent server: graphs load through tsx: graph \\"echo\\": \/deps\/compiled\/src\/graph\.ts changed after the image's prebuild step/,
      );

      const plain = await build('plain', async () => {});
      const served = await serve(plain.image, 'hello');
      assert.equal(served.answer, 'echo: hello');
      assert.match(served.logs, /agent server: graphs load from their bundles compiled at image build/);
      // The server's version check reads package.json files through an import only tsx allowed before the base image fixed it.
      assert.doesNotMatch(served.logs, /not up to date/);
      // The server is bundled at base-image build: it still reads its own version and that of the LangGraph it runs.
      const pinned = JSON.parse(await readFile(path.join(ROOT, 'scripts/base-images/langgraphjs-api/package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      assert.deepEqual(served.info, {
        ...(served.info as object),
        version: pinned.dependencies['@langchain/langgraph-api'],
        langgraph_js_version: pinned.dependencies['@langchain/langgraph'],
      });
    },
  );

  test('a graph a bundle would change (CommonJS project, __dirname) is not compiled and loads through tsx', { timeout: deadline(20 * 60_000) }, async () => {
    const { image, lines } = await build('commonjs', async (dir) => {
      const manifest = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
      delete manifest.type;
      await writeFile(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
      const graph = path.join(dir, 'src/graph.ts');
      const source = await readFile(graph, 'utf8');
      await writeFile(graph, source.replace('`echo: ${state.input}`', '`echo from ${__dirname.split("/").at(-1)}: ${state.input}`'));
    });
    assert.ok(lines.includes('prebuild: graph "echo" will load through tsx at start: src/graph.ts uses __dirname or __filename'), lines.join('\n'));
    const served = await serve(image, 'hello');
    assert.equal(served.answer, 'echo from src: hello');
    assert.match(served.logs, /agent server: graphs load through tsx: graph \\"echo\\" was not compiled when the image was built/);
  });
});
