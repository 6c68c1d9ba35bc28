// `berth builder` as the tests run it: the real runner (settings, claim loops, protocol,
// heartbeats, log batches, reports) with a quick build in place of a LangGraph one: a real
// git fetch of the job's source with the credentials the control plane gave (or Berth's safe
// unpack of the uploaded archive the runner downloaded), a commit of a
// small base image labelled with the revision, and a real push to Berth's registry with the
// job's push credential. RUNNER_TEST_BASE names the base image; RUNNER_TEST_HOLD=1 makes
// every build wait after its first lines until it is stopped (a runner to kill mid-build);
// RUNNER_TEST_GO_FILE makes it wait until that file exists, then log RUNNER_TEST_LINES
// numbered lines and go on (lines logged while the test holds the runner cut off).
// Every build first logs the limits its job carried. RUNNER_TEST_IDENTIFY=1 gives the driver
// Berth's own `identify` (engine/drivers/langgraph-inputs.ts, as the LangGraph driver has it):
// the runner then reports the build's inputs before building (the base image named by
// BERTH_BASE_IMAGE_NODE/_PYTHON must be in the store).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { runTool } from '../../src/containers/commands.js';
import { locateConfig, unpackSourceArchive } from '../../src/sources/source-archive.js';
import { pushImage } from '../../src/image-builds/push-image.js';
import type { ResolvedBuilder } from '../../src/image-builds/types.js';
import { MirrorCache } from '../../src/codehost/index.js';
import { createLogger } from '../../src/logger.js';
import type { RunnerJobView } from '../../src/contract/build-runners.js';
import type { BuildDriver, BuildRequest, BuiltImage, IdentifiedBuild, StepContext } from '../../src/engine/drivers/types.js';
import { identifyBuild } from '../../src/engine/drivers/langgraph-inputs.js';
import { loadRunnerConfig } from '../../src/runner/config.js';
import { BuildRunner } from '../../src/runner/runner.js';

const config = loadRunnerConfig(process.env);
const base = process.env.RUNNER_TEST_BASE ?? '';
const hold = process.env.RUNNER_TEST_HOLD === '1';
const goFile = process.env.RUNNER_TEST_GO_FILE ?? '';
const lineCount = Number(process.env.RUNNER_TEST_LINES ?? '0');
const identifies = process.env.RUNNER_TEST_IDENTIFY === '1';
const buildah: ResolvedBuilder = { kind: 'buildah', binary: 'buildah', env: process.env };
const mirrors = new MirrorCache({ root: path.join(config.dataDir, 'git'), allowLocal: true, knownHostsFile: path.join(config.dataDir, 'known_hosts') });

class QuickBuild implements BuildDriver {
  readonly name = 'quick';
  constructor(private readonly job: RunnerJobView) {
    if (!identifies) this.identify = undefined;
  }

  identify?: (request: BuildRequest, step: StepContext) => Promise<IdentifiedBuild> = (request, step) =>
    identifyBuild({ mirrors, host: buildah, baseImages: config.baseImages, scratchRoot: path.join(config.dataDir, 'inputs') }, request, step);

  async build(request: BuildRequest, step: StepContext): Promise<BuiltImage> {
    const resources = this.job.resources;
    await step.log('INFO', `Build limits: ${request.timeoutSeconds ?? 'no'} s, ${resources?.memory_mb ?? 'default'} MB, ${resources?.cpu ?? 'default'} CPU`);
    const commitSha = await this.#fetch(request, step);
    if (goFile) {
      await step.log('INFO', 'Holding the build');
      await untilExists(goFile, step.signal);
      for (let n = 1; n <= lineCount; n++) await step.log('INFO', `spooled line ${n}`);
    }
    if (hold) {
      await step.log('INFO', 'Holding the build');
      await new Promise((_, reject) => step.signal.addEventListener('abort', () => reject(step.signal.reason), { once: true }));
    }
    const image = this.job.image;
    const container = (await this.#buildah(['from', '--pull=false', base])).trim();
    try {
      await this.#buildah(['config', '--label', `berth.revision-id=${request.revisionId}`, container]);
      await this.#buildah(['commit', '--quiet', container, image]);
    } finally {
      await runTool(buildah, ['rm', container]);
    }
    await step.log('INFO', `Committed ${image}`);
    const push = this.job.push;
    if (!push) return { image, commitSha };
    const pushed = await pushImage(buildah, image, { tlsVerify: push.tls_verify, credentials: { username: push.username, password: push.password } }, () => {});
    await step.log('INFO', `Pushed ${image}`);
    await runTool(buildah, ['rmi', image]);
    return { image, commitSha, digest: pushed.digest ?? null, env: { FROM_LANGGRAPH_JSON: 'yes' } };
  }

  async #fetch(request: BuildRequest, step: StepContext): Promise<string | null> {
    const dest = path.join(config.dataDir, 'checkouts', `${request.revisionId}-${Date.now()}`);
    if (request.source.kind === 'archive') {
      await mkdir(path.dirname(dest), { recursive: true });
      const unpacked = await unpackSourceArchive(request.source.path, dest, { signal: step.signal });
      const located = await locateConfig(dest, request.graphConfigPath);
      await step.log('INFO', `Unpacked ${unpacked.files} files; found ${located.configPath}`);
      return null;
    }
    await step.log('INFO', `Fetching ${request.source.url} at ${request.source.ref}`);
    const { commitSha } = await mirrors.checkout({
      url: request.source.url,
      ref: request.source.ref,
      auth: request.source.auth,
      dest,
      signal: step.signal,
      log: () => {},
    });
    await step.log('INFO', `Checked out ${commitSha}`);
    return commitSha;
  }

  async #buildah(args: string[]): Promise<string> {
    const result = await runTool(buildah, args);
    if (result.code !== 0) throw new Error(`buildah ${args[0]} failed: ${result.stderr}`);
    return result.stdout;
  }
}

/** The test's go-ahead: a file it writes (polled; the build waits for nothing else). */
async function untilExists(file: string, signal: AbortSignal): Promise<void> {
  while (!existsSync(file)) {
    signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const runner = new BuildRunner(config, createLogger(config.logLevel, 'json'), (job) => new QuickBuild(job));
process.once('SIGTERM', () => runner.stop());
await runner.run();
