/**
 * The build scenario: Berth (compiled, as `npm start` runs it) builds the sample LangGraph.js
 * agent from a git repository and deploys it with podman, cold (a fresh data directory, so
 * no npm cache, and dependencies no earlier build installed) and warm (a commit that
 * changes only the graph's source), then a change of one secret (which builds nothing). Prints one JSON line: for each, the time from the
 * request (create or PATCH) to DEPLOYED and where it went, read off the revision's
 * timeline and log lines: git, the bases made available to the build sandbox (cold only),
 * the builder, the copy out of the sandbox, the container's start until /ok, and what is
 * left, Berth's own overhead.
 *
 *   node --import tsx bench/build.ts
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { TEST_BASE_IMAGE_NODE } from '../test/support/base-image.js';
import { tempDir } from '../test/support/git-repos.js';
import { tempBuildDir } from '../test/support/build-sandbox.js';
import { client } from '../test/support/http.js';
import { spawnBerth, stopBerth } from '../test/support/process.js';
import { baseImages, between, containersEnv, type LogLine as Line, sampleProjectRepository } from './sample-project.js';

const KEY = `berth_bench_${randomUUID()}_${randomUUID()}`;

export interface BuildPhase {
  totalMs: number;
  gitMs: number;
  /** Making the configured base image available to the sandbox's builds (once per host and base image). */
  basesMs: number;
  builderMs: number;
  /** Copying the built image out of the sandbox into the host's store. */
  exportMs: number;
  runtimeMs: number;
  overheadMs: number;
}

export interface BuildResult {
  cold: BuildPhase;
  warm: BuildPhase;
  /** A PATCH of one secret after the warm build: its inputs are unchanged, so it reuses the warm image (issue 21). */
  secretOnly: BuildPhase & { built: boolean };
  builder: string;
}

async function main(): Promise<void> {
  const env = containersEnv();
  baseImages(env);
  const repos = await tempDir('berth-bench-repos-');
  const data = await tempDir('berth-bench-build-');
  // A build directory of its own: the cold build pays for the bases, as the first build on a host does.
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
      LOG_LEVEL: 'warn',
    },
    { compiled: true },
  );
  const api = client(berth.url, { key: KEY });
  const name = `bench-build-${randomUUID().slice(0, 8)}`;
  let deploymentId: string | undefined;
  try {
    const integration = await api('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'bench', git: { repositories: [`${http.url}/acme/echo-agent.git`] } },
    });
    const [repository] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];

    const phase = async (deploymentId: string, revisionId: string, startedAt: number): Promise<BuildPhase> => {
      const done = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}?wait_for_terminal=300`);
      if (done.body.status !== 'DEPLOYED') throw new Error(`revision ended ${done.body.status}: ${done.body.status_message}`);
      const timeline = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/timeline`)).body.resources as {
        status: string;
        at: string;
      }[];
      const deployedAt = Date.parse(timeline.find((t) => t.status === 'DEPLOYED')?.at ?? '');
      const build = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`)).body.logs as Line[];
      const deploy = (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy&limit=1000`)).body.logs as Line[];
      const totalMs = deployedAt - startedAt;
      const gitMs = between(
        build,
        (m) => m.startsWith('Fetching '),
        (m) => m.startsWith('Checked out '),
      );
      const basesMs = between(
        build,
        (m) => m.startsWith('Making the base image'),
        (m) => m.startsWith('Building '),
      );
      const exporting = (m: string) => m.startsWith('Copying ') && m.endsWith("into this host's image store");
      const builderMs = between(build, (m) => m.startsWith('Building '), exporting);
      const exportMs = between(build, exporting, (m) => m.startsWith('Copied ') && m.includes(' out of the sandbox in '));
      const runtimeMs = between(
        deploy,
        (m) => m.startsWith('Starting container'),
        (m) => m.startsWith('Healthy after'),
      );
      return { totalMs, gitMs, basesMs, builderMs, exportMs, runtimeMs, overheadMs: totalMs - gitMs - basesMs - builderMs - exportMs - runtimeMs };
    };

    let startedAt = Date.now();
    const created = await api('POST', '/v2/deployments', {
      body: {
        name,
        source: 'codehost',
        source_config: { integration_id: integration.body.id, repo_url: repository?.url },
        source_revision_config: { repo_ref: 'main' },
        secrets: [],
      },
    });
    if (created.status !== 201) throw new Error(created.text);
    deploymentId = created.body.id as string;
    const cold = await phase(created.body.id, created.body.latest_revision_id, startedAt);

    const graph = path.join(repo.work, 'src/graph.ts');
    await repo.commit(
      'main',
      { 'src/graph.ts': (await readFile(graph, 'utf8')).replace('`echo: ${state.input}`', '`echo, warm: ${state.input}`') },
      'source only',
    );
    startedAt = Date.now();
    const patched = await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { source_revision_config: { repo_ref: 'main' } } });
    const warm = await phase(created.body.id, patched.body.latest_revision_id, startedAt);

    startedAt = Date.now();
    const bySecret = await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { secrets: [{ name: 'BENCH_SECRET', value: randomUUID() }] } });
    const secretPhase = await phase(created.body.id, bySecret.body.latest_revision_id, startedAt);
    const secretTimeline = (await api('GET', `/v2/deployments/${created.body.id}/revisions/${bySecret.body.latest_revision_id}/timeline`)).body.resources as {
      status: string;
    }[];
    const secretOnly = { ...secretPhase, built: secretTimeline.some((t) => t.status === 'BUILDING') };

    await api('DELETE', `/v2/deployments/${created.body.id}`);
    for (let i = 0; i < 300 && (await api('GET', `/v2/deployments/${created.body.id}`)).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
    const result: BuildResult = { cold, warm, secretOnly, builder: 'buildah' };
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
  }
}

main().catch((error) => {
  process.stderr.write(`build scenario failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
