/**
 * The agent server's start on its own (issue 21): the sample LangGraph.js agent
 * (test/fixtures/agents/echo-agent) built into an image on each base image named, then
 * started with podman over and over, the images alternating (A, B, A, B, …) so that every
 * image sees the same machine load. Each start is split by the server's own log:
 *
 * - run: `podman run -d` until it returned (the runtime's own work);
 * - modules: until the server's first line (node and the server's modules loading, tsx too
 *   when a graph was not compiled at build);
 * - graphs: that line until "listening" (the graphs imported);
 * - ready: "listening" until GET /ok answered 200 and POST /assistants/search listed the
 *   graph (what Berth waits for before it sends traffic), asked every 20 ms.
 *
 * Prints a table (median, min–max of each part, per base image) and one JSON line.
 *
 *   node --import tsx bench/agent-start.ts [--runs 8] [--base localhost/berth/langgraphjs-api:20 ...]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { buildImage, detectBuilder, type ResolvedBuilder } from '../src/image-builds/builder.js';
import { TEST_BASE_IMAGE_NODE } from '../test/support/base-image.js';
import { takeMachineTurn } from '../test/support/machine-lock.js';
import { freePort } from '../test/support/process.js';
import { containersEnv } from './sample-project.js';
import { percentile } from './stats.js';

const FIXTURE = path.resolve(import.meta.dirname, '../test/fixtures/agents/echo-agent');
const GRAPHS = { echo: './src/graph.ts:graph' };
const PROBE_EVERY_MS = 20;
const START_LIMIT_MS = 120_000;

interface Start {
  runMs: number;
  modulesMs: number;
  graphsMs: number;
  readyMs: number;
  totalMs: number;
}

const PARTS = ['runMs', 'modulesMs', 'graphsMs', 'readyMs', 'totalMs'] as const;

/** The LangGraph CLI's Dockerfile for the echo agent (as test/build/prebuilt-graphs.test.ts writes it). */
function dockerfile(base: string): string {
  return [
    `FROM ${base}`,
    'ADD . /deps/echo-agent',
    'WORKDIR /deps/echo-agent',
    'RUN npm ci',
    `ENV LANGSERVE_GRAPHS='${JSON.stringify(GRAPHS)}'`,
    'RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts',
  ].join('\n');
}

async function ready(url: string): Promise<boolean> {
  try {
    const ok = await fetch(`${url}/ok`);
    await ok.body?.cancel();
    if (ok.status !== 200) return false;
    const search = await fetch(`${url}/assistants/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { created_by: 'system' }, limit: 100, offset: 0 }),
    });
    const assistants = (await search.json()) as { graph_id?: string }[];
    return Array.isArray(assistants) && assistants.some((a) => a.graph_id === 'echo');
  } catch {
    return false;
  }
}

/** When the server logged its first own line and "listening" (its JSON lines carry timestamps). */
function serverLines(name: string, env: NodeJS.ProcessEnv): { first: number; listening: number } {
  const logs = spawnSync('podman', ['logs', name], { env, encoding: 'utf8' });
  const events: { event: string; at: number }[] = [];
  for (const text of `${logs.stdout}\n${logs.stderr}`.split('\n')) {
    try {
      const line = JSON.parse(text) as { timestamp?: string; event?: string };
      if (line.timestamp && line.event) events.push({ event: line.event, at: Date.parse(line.timestamp) });
    } catch {
      // Not one of the server's JSON lines.
    }
  }
  // The entrypoint says how the graphs will load before the server's modules load; the server's own first line follows.
  const first = Math.min(...events.filter((e) => !e.event.startsWith('agent server: graphs load')).map((e) => e.at));
  const listening = events.find((e) => e.event.startsWith('agent server: listening'))?.at ?? Number.NaN;
  return { first, listening };
}

async function startOnce(image: string, env: NodeJS.ProcessEnv): Promise<Start> {
  const name = `berth-bench-start-${randomUUID().slice(0, 8)}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  try {
    const started = Date.now();
    execFileSync('podman', ['run', '-d', '--init', '--name', name, '-p', `127.0.0.1:${port}:8000`, image], { env, stdio: 'ignore' });
    const ran = Date.now();
    while (!(await ready(url))) {
      if (Date.now() - started > START_LIMIT_MS) throw new Error(`${image} did not serve its graph within ${START_LIMIT_MS / 1000} s`);
      await delay(PROBE_EVERY_MS);
    }
    const readyAt = Date.now();
    const { first, listening } = serverLines(name, env);
    return { runMs: ran - started, modulesMs: first - ran, graphsMs: listening - first, readyMs: readyAt - listening, totalMs: readyAt - started };
  } finally {
    spawnSync('podman', ['rm', '-f', '-t', '0', name], { env, stdio: 'ignore' });
  }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

function summary(starts: Start[]): Record<string, string> {
  return Object.fromEntries(
    PARTS.map((part) => {
      const values = starts.map((s) => s[part]);
      return [part, `${seconds(percentile(values, 50))} (${seconds(Math.min(...values))}–${seconds(Math.max(...values))})`];
    }),
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '8' }, base: { type: 'string', multiple: true } } });
  const runs = Number(values.runs);
  const bases = values.base ?? [`${TEST_BASE_IMAGE_NODE}:20`];
  const env = containersEnv();
  // Image tests of other sessions take turns on this lock; measuring during one of them measures it.
  const release = await takeMachineTurn();
  const work = await mkdtemp(path.join(os.tmpdir(), 'berth-bench-start-'));
  const images: string[] = [];
  try {
    const found = await detectBuilder('auto', env);
    if (typeof found !== 'object') throw new Error(`no image builder: ${String(found)}`);
    const builder: ResolvedBuilder = found;
    const context = path.join(work, 'echo-agent');
    await cp(FIXTURE, context, { recursive: true });
    for (const base of bases) {
      const tag = `localhost/berth-bench/agent-start:${randomUUID().slice(0, 8)}`;
      images.push(tag);
      await buildImage(builder, { contextDir: context, dockerfile: dockerfile(base), tag, log: () => undefined });
    }
    const loadBefore = os.loadavg();
    const starts: Start[][] = bases.map(() => []);
    for (let i = 0; i < runs; i++) {
      for (const [b, image] of images.entries()) starts[b]?.push(await startOnce(image, env));
    }
    const loadAfter = os.loadavg();
    const load = (l: number[]) => l.map((v) => v.toFixed(1)).join(' / ');
    console.log(
      `${runs} starts per base image, alternating; load (1/5/15 min) before ${load(loadBefore)}, after ${load(loadAfter)} on ${os.cpus().length} cores`,
    );
    console.log('| base image | podman run | modules | graphs | listening → ready | total |');
    console.log('|---|---|---|---|---|---|');
    for (const [b, base] of bases.entries()) {
      const s = summary(starts[b] ?? []);
      console.log(`| ${base} | ${s.runMs} | ${s.modulesMs} | ${s.graphsMs} | ${s.readyMs} | ${s.totalMs} |`);
    }
    console.log(JSON.stringify({ bases, starts, load: { before: loadBefore, after: loadAfter } }));
  } finally {
    if (images.length > 0) spawnSync('podman', ['rmi', '-f', ...images], { env, stdio: 'ignore' });
    await rm(work, { recursive: true, force: true });
    await release();
  }
}

await main();
