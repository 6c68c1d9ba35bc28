import { findOnPath, withContainersConf } from '../../../containers/tools.js';
import { lastLine, runCommand, type ContainerRuntimeKind, type ResolvedRuntime } from './cli.js';
import { formatSeconds } from './step.js';

const INFO_TIMEOUT_MS = 10_000;
const LISTENER_HINT = 'or place the deployment on a listener (source_config.listener_id) instead of the local runtime';

/** The first runtime of the preference whose `info` answers, or why none does (what to install). */
export async function detectRuntime(preference: ContainerRuntimeKind | 'auto', baseEnv: NodeJS.ProcessEnv): Promise<ResolvedRuntime | string> {
  const kinds: ContainerRuntimeKind[] = preference === 'auto' ? ['podman', 'docker'] : [preference];
  const problems: string[] = [];
  for (const kind of kinds) {
    const binary = await findOnPath(kind, baseEnv.PATH);
    if (!binary) continue;
    const runtime: ResolvedRuntime = { kind, binary, env: runtimeEnv(kind, baseEnv) };
    const info = await runCommand(runtime, ['info', '--format', kind === 'podman' ? '{{.Host.OCIRuntime.Name}}' : '{{.ServerVersion}}'], {
      timeoutMs: INFO_TIMEOUT_MS,
    });
    if (info.code === 0) return runtime;
    const why = info.failure === 'timeout' ? `did not answer within ${formatSeconds(INFO_TIMEOUT_MS)}` : `failed: ${lastLine(info)}`;
    problems.push(`${kind} is installed (${binary}) but \`${kind} info\` ${why}`);
  }
  const install =
    preference === 'docker'
      ? 'Install Docker (apt-get install docker.io) and start its daemon'
      : preference === 'podman'
        ? 'Install podman (apt-get install podman, then run scripts/setup-containers.sh)'
        : 'Install podman (apt-get install podman, then run scripts/setup-containers.sh) or Docker';
  if (problems.length === 0) {
    const missing = kinds.length > 1 ? `neither ${kinds.join(' nor ')} is on PATH` : `${kinds[0]} is not on PATH`;
    return `No container runtime found: ${missing}. ${install}, ${LISTENER_HINT}.`;
  }
  return `No working container runtime: ${problems.join('; ')}. ${install}, ${LISTENER_HINT}.`;
}

function runtimeEnv(kind: ContainerRuntimeKind, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return kind === 'podman' ? withContainersConf(base) : { ...base };
}
