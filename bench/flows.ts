/**
 * The flows scenario (issue 21, "Speed"): what a user of the sample project waits for.
 * The sample LangGraph.js agent in a git repository behind a `git` integration that builds
 * on push (polled every second), built with buildah in the build sandbox and run with
 * podman by Berth compiled as `npm start` runs it:
 *
 * - cold: the deployment's first build, from the create until the agent answers the SDK;
 * - push, warm (several times, p50): from `git push` until the agent answers the SDK with
 *   the new graph, split into the poll's wait, git, the builder's own time, the copy out of
 *   the sandbox, the container's start until it serves every graph, and the rest (Berth);
 * - a secret-only revision, an unchanged commit (PATCH of the same ref) and a rollback (the
 *   redeploy of an older revision, until the old graph answers): time and builds.
 *
 * Prints one JSON line (FlowsResult).
 *
 *   node --import tsx bench/flows.ts [pushes]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { TEST_BASE_IMAGE_NODE } from '../test/support/base-image.js';
import { tempDir } from '../test/support/git-repos.js';
import { tempBuildDir } from '../test/support/build-sandbox.js';
import { client } from '../test/support/http.js';
import { takeMachineTurn } from '../test/support/machine-lock.js';
import { spawnBerth, stopBerth } from '../test/support/process.js';
import { baseImages, between, containersEnv, type LogLine as Line, sampleProjectRepository } from './sample-project.js';

const KEY = `berth_bench_${randomUUID()}_${randomUUID()}`;
const PUSHES = Number(process.argv[2] ?? 5);
const POLL_SECONDS = 1;

/** One flow, in ms: from its start (create, push, PATCH or redeploy) until the agent answered the SDK. */
export interface Flow {
  totalMs: number;
  /** Push until the poller's revision exists (0 for API requests). */
  pollMs: number;
  gitMs: number;
  basesMs: number;
  builderMs: number;
  exportMs: number;
  /** The container's start until it answered /ok and listed every graph. */
  runtimeMs: number;
  /** Of which (the agent server's own log): `podman run` until the server's first line (node, the server's modules, tsx if a graph needs it)… */
  serverStartMs: number;
  /** …its first line until it listens (the graphs imported)… */
  graphLoadMs: number;
  /** …and listening until Berth saw /ok and the graphs. */
  healthMs: number;
  /** DEPLOYED until the SDK's run answered. */
  answerMs: number;
  /** The rest: Berth's own work between the steps (queueing, status changes, reuse checks). */
  overheadMs: number;
  builds: number;
}

export interface FlowsResult {
  cold: Flow;
  pushes: Flow[];
  secretOnly: Flow;
  unchanged: Flow;
  rollback: Flow;
  load: { before: number[]; after: number[] };
  cores: number;
}

async function main(): Promise<void> {
  const env = containersEnv();
  // Image tests of other sessions take turns on this lock; measuring during one of them measures it.
  const release = await takeMachineTurn();
  const loadBefore = os.loadavg();
  baseImages(env);
  const repos = await tempDir('berth-bench-repos-');
  const data = await tempDir('berth-bench-flows-');
  const builds = await tempBuildDir({ diskMb: 20_480 });
  const { repo, http } = await sampleProjectRepository(repos.path);
  const berth = await spawnBerth(
    {
      ...(env as Record<string, string>),
      ...builds.env,
      BERTH_DATA_DIR: data.path,
      BERTH_BOOTSTRAP_API_KEY: KEY,
      BERTH_CONTAINER_RUNTIME: 'podman',
      BERTH_BASE_IMAGE_NODE: TEST_BASE_IMAGE_NODE,
      BERTH_GIT_POLL_SECONDS: String(POLL_SECONDS),
      LOG_LEVEL: 'warn',
    },
    { compiled: true },
  );
  const api = client(berth.url, { key: KEY });
  let deploymentId = '';
  const name = `bench-flows-${randomUUID().slice(0, 8)}`;
  try {
    const integration = await api('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'bench', git: { repositories: [`${http.url}/acme/echo-agent.git`] } },
    });
    const [repository] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];

    /** The agent's answer through the official SDK, as a user's client asks it. */
    const ask = async (input: string): Promise<unknown> => {
      const deployment = (await api('GET', `/v2/deployments/${deploymentId}`)).body;
      const sdk = new Client({ apiUrl: deployment.source_config.custom_url as string });
      const [assistant] = await sdk.assistants.search({ graphId: 'echo' });
      if (!assistant) throw new Error('the echo graph has no assistant');
      const thread = await sdk.threads.create();
      return ((await sdk.runs.wait(thread.thread_id, assistant.assistant_id, { input: { input } })) as { output?: unknown }).output;
    };

    /** Where the container's start went, from the agent server's own (JSON, timestamped) log lines. */
    const serverPhases = (revisionId: string, deploy: Line[]): Pick<Flow, 'serverStartMs' | 'graphLoadMs' | 'healthMs'> => {
      const container = `berth-${name}-${revisionId.slice(0, 8)}`;
      // The server logs requests to stdout and its own lines (listening, failures) to stderr.
      const logs = spawnSync('podman', ['logs', container], { env, encoding: 'utf8' });
      const output = `${logs.stdout}\n${logs.stderr}`;
      const events: Line[] = [];
      for (const text of output.split('\n')) {
        try {
          const line = JSON.parse(text) as { timestamp?: string; event?: string };
          if (line.timestamp && line.event) events.push({ message: line.event, timestamp: Date.parse(line.timestamp) });
        } catch {
          // Not one of the server's JSON lines.
        }
      }
      const started = deploy.find((l) => l.message.startsWith('Waiting for GET /ok'))?.timestamp ?? Number.NaN;
      // The entrypoint says how the graphs will load before the server's modules load; the server's own first line follows them.
      const first = Math.min(...events.filter((e) => !e.message.startsWith('agent server: graphs load')).map((e) => e.timestamp));
      const listening = events.find((e) => e.message.startsWith('agent server: listening'))?.timestamp ?? Number.NaN;
      const healthy = deploy.find((l) => l.message.startsWith('Healthy after'))?.timestamp ?? Number.NaN;
      return { serverStartMs: first - started, graphLoadMs: listening - first, healthMs: healthy - listening };
    };

    /** Waits for the revision to be DEPLOYED and for the agent's answer, and splits the time. */
    const flow = async (revisionId: string, startedAt: number, expected: string): Promise<Flow> => {
      const done = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=300`);
      if (done.body.status !== 'DEPLOYED') throw new Error(`revision ended ${done.body.status}: ${done.body.status_message}`);
      const answer = await ask('bench');
      const answeredAt = Date.now();
      if (answer !== expected) throw new Error(`the agent answered ${JSON.stringify(answer)}, not ${JSON.stringify(expected)}`);
      const timeline = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/timeline`)).body.resources as {
        status: string;
        at: string;
      }[];
      const at = (status: string) => Date.parse(timeline.find((t) => t.status === status)?.at ?? '');
      const build = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`)).body.logs as Line[];
      const deploy = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy&limit=1000`)).body.logs as Line[];
      const exporting = (m: string) => m.startsWith('Copying ') && m.endsWith("into this host's image store");
      const parts = {
        pollMs: Math.max(0, at('QUEUED') - startedAt),
        gitMs: between(
          build,
          (m) => m.startsWith('Fetching '),
          (m) => m.startsWith('Checked out '),
        ),
        basesMs: between(
          build,
          (m) => m.startsWith('Making the base image'),
          (m) => m.startsWith('Building '),
        ),
        builderMs: between(build, (m) => m.startsWith('Building '), exporting),
        exportMs: between(build, exporting, (m) => m.startsWith('Copied ') && m.includes(' out of the sandbox in ')),
        runtimeMs: between(
          deploy,
          (m) => m.startsWith('Starting container'),
          (m) => m.startsWith('Healthy after'),
        ),
        answerMs: answeredAt - at('DEPLOYED'),
      };
      const totalMs = answeredAt - startedAt;
      const accounted = Object.values(parts).reduce((sum, ms) => sum + ms, 0);
      return {
        totalMs,
        ...parts,
        ...serverPhases(revisionId, deploy),
        overheadMs: totalMs - accounted,
        builds: timeline.some((t) => t.status === 'BUILDING') ? 1 : 0,
      };
    };

    /** The revision the poller makes for a push: the deployment's newest once it is not `previous`. */
    const nextRevision = async (previous: string): Promise<string> => {
      for (const until = Date.now() + 120_000; Date.now() < until;) {
        const latest = (await api('GET', `/v2/deployments/${deploymentId}`)).body.latest_revision_id as string;
        if (latest !== previous) return latest;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('no revision for the push within 120 s');
    };

    let startedAt = Date.now();
    const created = await api('POST', '/v2/deployments', {
      body: {
        name,
        source: 'codehost',
        source_config: { integration_id: integration.body.id, repo_url: repository?.url, build_on_push: true },
        source_revision_config: { repo_ref: 'main' },
        secrets: [],
      },
    });
    if (created.status !== 201) throw new Error(created.text);
    deploymentId = created.body.id as string;
    const cold = await flow(created.body.latest_revision_id, startedAt, 'echo: bench');

    const graphFile = path.join(repo.work, 'src/graph.ts');
    const original = await readFile(graphFile, 'utf8');
    const pushes: Flow[] = [];
    const pushed: string[] = [];
    let latest = created.body.latest_revision_id as string;
    for (let i = 1; i <= PUSHES; i++) {
      await repo.commit('main', { 'src/graph.ts': original.replace('`echo: ${state.input}`', `\`echo ${i}: \${state.input}\``) }, `push ${i}`);
      startedAt = Date.now();
      latest = await nextRevision(latest);
      pushed.push(latest);
      pushes.push(await flow(latest, startedAt, `echo ${i}: bench`));
    }

    startedAt = Date.now();
    const bySecret = await api('PATCH', `/v2/deployments/${deploymentId}`, { body: { secrets: [{ name: 'BENCH_SECRET', value: randomUUID() }] } });
    const secretOnly = await flow(bySecret.body.latest_revision_id, startedAt, `echo ${PUSHES}: bench`);

    startedAt = Date.now();
    const sameCommit = await api('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_revision_config: { repo_ref: 'main' } } });
    const unchanged = await flow(sameCommit.body.latest_revision_id, startedAt, `echo ${PUSHES}: bench`);

    // Back to the first push's revision, whose image is still there.
    startedAt = Date.now();
    const redeployed = await api('POST', `/v2/deployments/${deploymentId}/revisions/${pushed[0]}/redeploy`);
    if (redeployed.status !== 200) throw new Error(redeployed.text);
    const rollback = await flow(redeployed.body.latest_revision_id, startedAt, 'echo 1: bench');

    await api('DELETE', `/v2/deployments/${deploymentId}`);
    for (let i = 0; i < 300 && (await api('GET', `/v2/deployments/${deploymentId}`)).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
    const result: FlowsResult = { cold, pushes, secretOnly, unchanged, rollback, load: { before: loadBefore, after: os.loadavg() }, cores: os.cpus().length };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await stopBerth(berth);
    if (deploymentId) {
      const images = execFileSync('podman', ['images', '--filter', `label=berth.deployment-id=${deploymentId}`, '--format', '{{.ID}}'], {
        env,
        encoding: 'utf8',
      })
        .split('\n')
        .filter(Boolean);
      if (images.length > 0) execFileSync('podman', ['rmi', '-f', ...new Set(images)], { env, stdio: 'ignore' });
    }
    await builds.remove();
    await http.close();
    await repos.remove();
    await data.remove();
    await release();
  }
}

main().catch((error) => {
  process.stderr.write(`flows scenario failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
