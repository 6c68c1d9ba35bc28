import { findOnPath, withContainersConf } from '../containers/tools.js';
import { lastOutputLine, runBuilderCommand } from './commands.js';
import type { BuilderKind, BuilderPreference, ResolvedBuilder } from './types.js';

const PROBE_TIMEOUT_MS = 15_000;
const AUTO_ORDER: BuilderKind[] = ['buildah', 'podman', 'docker'];

/** What proves each builder can build here, not merely that it is installed. */
const PROBES: Record<BuilderKind, string[]> = {
  buildah: ['info', '--format', '{{.store.GraphDriverName}}'],
  podman: ['info', '--format', '{{.Store.GraphDriverName}}'],
  // Only the daemon builds; the client alone answers `docker --version`.
  docker: ['version', '--format', '{{.Server.Version}}'],
};

const INSTALL: Record<BuilderPreference, string> = {
  auto: 'Install buildah or podman (apt-get install buildah podman, then run scripts/setup-containers.sh), or Docker with a running daemon',
  buildah: 'Install buildah (apt-get install buildah, then run scripts/setup-containers.sh), or set BERTH_BUILDER=auto',
  podman: 'Install podman (apt-get install podman, then run scripts/setup-containers.sh), or set BERTH_BUILDER=auto',
  docker: 'Install Docker and start its daemon (or point DOCKER_HOST at one), or set BERTH_BUILDER=auto',
};

/**
 * The first builder of the preference that answers its probe, or why none can build
 * (what to install or start).
 */
export async function detectBuilder(preference: BuilderPreference, baseEnv: NodeJS.ProcessEnv): Promise<ResolvedBuilder | string> {
  const kinds = preference === 'auto' ? AUTO_ORDER : [preference];
  const problems: string[] = [];
  for (const kind of kinds) {
    const binary = await findOnPath(kind, baseEnv.PATH);
    if (!binary) continue;
    const builder: ResolvedBuilder = { kind, binary, env: builderEnv(kind, baseEnv) };
    const probe = await runBuilderCommand(builder, PROBES[kind], { timeoutMs: PROBE_TIMEOUT_MS });
    if (probe.code === 0) return builder;
    problems.push(`${kind} is installed (${binary}) but \`${kind} ${PROBES[kind][0]}\` failed: ${lastOutputLine(probe)}`);
  }
  if (problems.length === 0) {
    const missing = kinds.length > 1 ? `none of ${kinds.join(', ')} is on PATH` : `${kinds[0]} is not on PATH`;
    return `No image builder found: ${missing}. ${INSTALL[preference]}.`;
  }
  return `No working image builder: ${problems.join('; ')}. ${INSTALL[preference]}.`;
}

/** buildah and podman read Berth's containers.conf (runc, ulimits) unless told otherwise. */
function builderEnv(kind: BuilderKind, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return kind === 'docker' ? { ...base } : withContainersConf(base);
}
