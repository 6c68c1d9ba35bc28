import { lastOutputClause, type ResolvedTool, runTool } from './commands.js';
import { findOnPath, withContainersConf } from './tools.js';

export type BuilderKind = 'buildah' | 'podman' | 'docker';
/** `auto` takes the first usable of buildah, `podman build`, `docker build` (BERTH_BUILDER). */
export type BuilderPreference = 'auto' | BuilderKind;
export type ContainerRuntimeKind = 'podman' | 'docker';

/** A container runtime found and answering. */
export type ResolvedRuntime = Found<ContainerRuntimeKind>;

/** A tool of one kind found and answering. */
export type Found<K extends string> = ResolvedTool & { kind: K };

interface ToolSearch<K extends string> {
  /** In the order they are tried. */
  kinds: readonly K[];
  /** What proves a kind can do the work here, not merely that it is installed. */
  probe: (kind: K) => string[];
  probeTimeoutMs: number;
  /** How a probe that timed out is told (the runtime and the builder word it differently). */
  timedOut: (kind: K) => string;
  /** What is looked for, for the messages: "image builder", "container runtime". */
  what: string;
  missing: (kinds: readonly K[]) => string;
  /** What to install or start, and any other way out. */
  remedy: string;
}

/**
 * The first kind of `search` on the search path whose probe answers, or why none does: one
 * sentence naming each kind that is installed but failed, and what to install.
 */
async function detectTool<K extends string>(search: ToolSearch<K>, baseEnv: NodeJS.ProcessEnv): Promise<Found<K> | string> {
  const problems: string[] = [];
  for (const kind of search.kinds) {
    const binary = await findOnPath(kind, baseEnv.PATH);
    if (!binary) continue;
    // buildah and podman read Berth's containers.conf (runc, ulimits) unless told otherwise.
    const tool: Found<K> = { kind, binary, env: kind === 'docker' ? { ...baseEnv } : withContainersConf(baseEnv) };
    const args = search.probe(kind);
    const probe = await runTool(tool, args, { timeoutMs: search.probeTimeoutMs });
    if (probe.code === 0) return tool;
    const why = probe.failure === 'timeout' ? search.timedOut(kind) : `failed: ${lastOutputClause(probe)}`;
    problems.push(`${kind} is installed (${binary}) but \`${kind} ${args[0]}\` ${why}`);
  }
  if (problems.length === 0) return `No ${search.what} found: ${search.missing(search.kinds)}. ${search.remedy}.`;
  return `No working ${search.what}: ${problems.join('; ')}. ${search.remedy}.`;
}

const BUILDER_PROBES: Record<BuilderKind, string[]> = {
  buildah: ['info', '--format', '{{.store.GraphDriverName}}'],
  podman: ['info', '--format', '{{.Store.GraphDriverName}}'],
  // Only the daemon builds; the client alone answers `docker --version`.
  docker: ['version', '--format', '{{.Server.Version}}'],
};

const INSTALL_BUILDER: Record<BuilderPreference, string> = {
  auto: 'Install buildah or podman (apt-get install buildah podman, then run scripts/setup-containers.sh), or Docker with a running daemon',
  buildah: 'Install buildah (apt-get install buildah, then run scripts/setup-containers.sh), or set BERTH_BUILDER=auto',
  podman: 'Install podman (apt-get install podman, then run scripts/setup-containers.sh), or set BERTH_BUILDER=auto',
  docker: 'Install Docker and start its daemon (or point DOCKER_HOST at one), or set BERTH_BUILDER=auto',
};

/**
 * How long a probe may take before its tool counts as not working. `podman info` and
 * `buildah version` wait for the image store's lock, which a build or an image export holds
 * for seconds on a busy host: a probe cut short there would fail a deployment with "no working
 * container runtime" while podman works. A tool that hangs for good still fails, later.
 */
const PROBE_TIMEOUT_MS = 60_000;

/** The first builder of the preference that can build here, or why none can (what to install or start). */
export function detectBuilder(preference: BuilderPreference, baseEnv: NodeJS.ProcessEnv): Promise<Found<BuilderKind> | string> {
  return detectTool(
    {
      kinds: preference === 'auto' ? ['buildah', 'podman', 'docker'] : [preference],
      probe: (kind) => BUILDER_PROBES[kind],
      probeTimeoutMs: PROBE_TIMEOUT_MS,
      timedOut: () => 'failed: the command timed out',
      what: 'image builder',
      missing: (kinds) => (kinds.length > 1 ? `none of ${kinds.join(', ')} is on PATH` : `${kinds[0]} is not on PATH`),
      remedy: INSTALL_BUILDER[preference],
    },
    baseEnv,
  );
}

const INSTALL_RUNTIME: Record<ContainerRuntimeKind | 'auto', string> = {
  auto: 'Install podman (apt-get install podman, then run scripts/setup-containers.sh) or Docker',
  podman: 'Install podman (apt-get install podman, then run scripts/setup-containers.sh)',
  docker: 'Install Docker (apt-get install docker.io) and start its daemon',
};

/** The first runtime of the preference whose `info` answers, or why none does (what to install). */
export function detectRuntime(preference: ContainerRuntimeKind | 'auto', baseEnv: NodeJS.ProcessEnv): Promise<ResolvedRuntime | string> {
  return detectTool(
    {
      kinds: preference === 'auto' ? ['podman', 'docker'] : [preference],
      probe: (kind) => ['info', '--format', kind === 'podman' ? '{{.Host.OCIRuntime.Name}}' : '{{.ServerVersion}}'],
      probeTimeoutMs: PROBE_TIMEOUT_MS,
      timedOut: () => `did not answer within ${PROBE_TIMEOUT_MS / 1000} s`,
      what: 'container runtime',
      missing: (kinds) => (kinds.length > 1 ? `neither ${kinds.join(' nor ')} is on PATH` : `${kinds[0]} is not on PATH`),
      remedy: `${INSTALL_RUNTIME[preference]}, or place the deployment on a listener (source_config.listener_id) instead of the local runtime`,
    },
    baseEnv,
  );
}
