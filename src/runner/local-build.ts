import path from 'node:path';
import type { RunnerJobView } from '../contract/build-runners.js';
import { LangGraphBuildDriver, prepareBuildSandbox, type SandboxLimits } from '../engine/drivers/langgraph-build.js';
import { DriverError } from '../engine/drivers/types.js';
import { detectBuilder } from '../image-builds/builder.js';
import type { BuildSandbox } from '../sandbox/sandbox.js';
import { type RunnerConfig, RunnerConfigError, type RunnerSandboxSettings } from './config.js';
import type { DriverFor } from './job.js';

/**
 * The build sandbox of `berth builder`, set up once at start and shared by its jobs, as the
 * control plane's own (BERTH_BUILD_SANDBOX, on by default). A host that cannot provide it
 * refuses to start, saying what it lacks, rather than claim builds it would fail.
 */
export async function prepareRunnerSandbox(config: RunnerConfig, env: NodeJS.ProcessEnv = process.env): Promise<BuildSandbox | undefined> {
  if (!config.sandbox) return undefined;
  try {
    const host = await detectBuilder(config.builder, env);
    if (typeof host === 'string') throw new DriverError(host);
    return await prepareBuildSandbox(host, config.sandbox, 'BERTH_RUNNER_BUILDER');
  } catch (error) {
    if (!(error instanceof DriverError)) throw error;
    throw new RunnerConfigError(`berth builder cannot start: ${error.message.replace('Start Berth as root', 'Start berth builder as root')}`);
  }
}

/**
 * The driver `berth builder` builds with: Berth's own LangGraph builder, in the sandbox when
 * it is on (`sandbox`, else one set up on a job's first build), bounded by the job's memory
 * and CPU where it carries them (its timeout is job.ts's, for every executor), pushing with
 * the job's credential.
 */
export function langGraphDriverFor(config: RunnerConfig, sandbox?: BuildSandbox): DriverFor {
  return (job) => {
    const limits = config.sandbox ? jobLimits(job, config.sandbox) : undefined;
    return new LangGraphBuildDriver({
      dataDir: config.dataDir,
      builder: config.builder,
      baseImages: config.baseImages,
      allowLocal: true,
      knownHostsFile: path.join(config.dataDir, 'git', 'known_hosts'),
      ...(config.sandbox ? { sandbox: sandbox ?? config.sandbox } : {}),
      ...(limits ? { limits } : {}),
      ...(job.push
        ? {
            registry: {
              host: job.push.registry,
              pathPrefix: job.push.path_prefix,
              tlsVerify: job.push.tls_verify,
              pushCredentials: async (repository: string) =>
                repository === job.push?.repository ? { username: job.push.username, password: job.push.password } : undefined,
            },
          }
        : {}),
    });
  };
}

/**
 * The job's memory and CPU bound in the sandbox: its `resource_spec` limit, else twice its
 * request (as for a Kubernetes build and a revision on one machine), never more than the
 * runner's own BERTH_BUILD_MEMORY_MB and BERTH_BUILD_CPUS: a workspace member sets the
 * resource_spec, the operator the runner's machine.
 */
export function jobLimits(job: RunnerJobView, settings: RunnerSandboxSettings): SandboxLimits | undefined {
  const asked = job.resources;
  if (!asked) return undefined;
  const memory = asked.memory_limit_mb ?? (asked.memory_mb === null ? null : asked.memory_mb * 2);
  const cpus = asked.cpu_limit ?? (asked.cpu === null ? null : asked.cpu * 2);
  if (memory === null && cpus === null) return undefined;
  const jobMemory = memory !== null && memory < settings.memoryMb;
  return {
    memoryMb: jobMemory ? memory : settings.memoryMb,
    cpus: cpus !== null && cpus < settings.cpus ? cpus : settings.cpus,
    memorySource: !jobMemory ? 'BERTH_BUILD_MEMORY_MB' : asked.memory_limit_mb !== null ? 'resource_spec.memory_limit_mb' : 'twice resource_spec.memory_mb',
  };
}
