import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { LangGraphBuildDriver } from '../../engine/drivers/langgraph-build.js';
import { type BuildRequest, type BuildSource, DriverError, type LogLevel } from '../../engine/drivers/types.js';
import type { PodJob } from './manifests.js';
import { fetchPodArchive } from './pod-archive.js';
import { gitSource } from '../source.js';
import { logLine, resultLine } from './pod-lines.js';

/**
 * `berth builder-pod`, what a build Job's pod runs: reads the job from its Secret's file,
 * fetches an uploaded project from its runner (a repository is cloned by the build), builds with Berth's own LangGraph builder (buildah, the pod's settings choose chroot
 * isolation and the vfs store) and pushes with the job's credential, writing its log
 * lines and then its result on standard output for the runner to read (pod-lines.ts).
 * Returns the exit code.
 */
export async function buildInPod(jobFile: string, workDir: string, out: Writable, signal: AbortSignal): Promise<number> {
  const job = JSON.parse(await readFile(jobFile, 'utf8')) as PodJob;
  const push = job.push;
  const driver = new LangGraphBuildDriver({
    dataDir: workDir,
    builder: 'buildah',
    baseImages: {},
    allowLocal: true,
    knownHostsFile: path.join(workDir, 'git', 'known_hosts'),
    ...(push
      ? {
          registry: {
            host: push.registry,
            pathPrefix: push.path_prefix,
            tlsVerify: push.tls_verify,
            pushCredentials: async (repository: string) => (repository === push.repository ? { username: push.username, password: push.password } : undefined),
          },
        }
      : {}),
  });
  const log = async (level: LogLevel, message: string) => void out.write(logLine(level, message));
  try {
    const request: BuildRequest = {
      workspaceId: job.workspace_id,
      deploymentId: job.deployment_id,
      deploymentName: job.deployment_name,
      revisionId: job.revision_id,
      source: await podSource(job.source, workDir, signal, log),
      graphConfigPath: job.graph_config_path,
      installCommand: job.install_command,
      buildCommand: job.build_command,
    };
    const built = await driver.build(request, { signal, log });
    out.write(resultLine(built));
    return 0;
  } catch (error) {
    out.write(logLine('ERROR', error instanceof DriverError ? error.message : 'the build pod failed unexpectedly.'));
    return 1;
  }
}

/** The build's source: a repository as the Secret names it, or the uploaded archive downloaded into the work directory. */
export async function podSource(
  source: PodJob['source'],
  workDir: string,
  signal: AbortSignal,
  log: (level: LogLevel, message: string) => Promise<void>,
): Promise<BuildSource> {
  if (source.kind === 'archive') {
    await log('INFO', 'Fetching the uploaded project from the build runner');
    await mkdir(workDir, { recursive: true });
    const file = path.join(workDir, 'upload.tar.gz');
    await fetchPodArchive(source, file, signal);
    return { kind: 'archive', path: file };
  }
  return gitSource(source.url, source.ref, source.credentials);
}
