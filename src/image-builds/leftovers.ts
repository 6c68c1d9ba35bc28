import { runTool } from '../containers/commands.js';
import type { ResolvedBuilder } from './types.js';

/** A container buildah (or `podman build`) builds in; none should outlive its build. */
interface WorkingContainer {
  id: string;
  imageId: string;
  imageName: string;
}

/**
 * Lists buildah's working containers (podman shows them as "external" containers). Docker
 * keeps its build containers inside the daemon, which removes them itself: none to list.
 */
export async function listWorkingContainers(builder: ResolvedBuilder): Promise<WorkingContainer[]> {
  if (builder.kind === 'docker') return [];
  if (builder.kind === 'buildah') {
    const listed = await runTool(builder, ['containers', '--json']);
    if (listed.code !== 0) return [];
    // buildah prints `null` when there are none.
    const rows = (JSON.parse(listed.stdout || 'null') ?? []) as { id: string; imageid: string; imagename: string; builder: boolean }[];
    return rows.filter((row) => row.builder).map((row) => ({ id: row.id, imageId: row.imageid, imageName: row.imagename }));
  }
  const listed = await runTool(builder, ['ps', '--all', '--external', '--format', 'json']);
  if (listed.code !== 0) return [];
  const rows = (JSON.parse(listed.stdout || 'null') ?? []) as { Id: string; ImageID: string; Image: string; State: string }[];
  return rows.filter((row) => row.State === 'storage').map((row) => ({ id: row.Id, imageId: row.ImageID, imageName: row.Image }));
}

/** What a build's output and Dockerfile say about the images it started from and made. */
export interface BuildFootprint {
  /** Image references of FROM instructions. */
  fromRefs: Set<string>;
  /** Ids (full or abbreviated) of the intermediate images the build committed or reused, in order. */
  layerIds: string[];
  /** Full ids of the intermediate images it took from the layer cache (made by earlier builds). */
  reusedIds: Set<string>;
}

export function emptyFootprint(): BuildFootprint {
  return { fromRefs: new Set(), layerIds: [], reusedIds: new Set() };
}

const FROM_LINE = /^\s*FROM\s+(?:--\S+\s+)*(\S+)/gim;
const STEP_FROM = /^STEP \d+\/\d+: FROM\s+(?:--\S+\s+)*(\S+)/i;
const LAYER = /^--> ([0-9a-f]{10,64})$/;
const REUSED = /^--> Using cache ([0-9a-f]{64})$/;

export function footprintOfDockerfile(dockerfile: string, into: BuildFootprint): void {
  for (const match of dockerfile.matchAll(FROM_LINE)) if (match[1]) into.fromRefs.add(match[1]);
}

/** Reads one line of buildah's output for image ids and FROM references. */
export function footprintOfLine(line: string, into: BuildFootprint): void {
  const layer = LAYER.exec(line);
  if (layer?.[1]) into.layerIds.push(layer[1]);
  const reused = REUSED.exec(line);
  if (reused?.[1]) into.reusedIds.add(reused[1]);
  const from = STEP_FROM.exec(line);
  if (from?.[1]) into.fromRefs.add(from[1]);
}

/**
 * Removes the intermediate images a failed or stopped build committed (its completed
 * steps), newest first; images it took from the cache stay. An image that another build
 * has since used (as a parent or for a container) cannot be removed and is kept.
 */
export async function removeCreatedLayers(builder: ResolvedBuilder, footprint: BuildFootprint): Promise<number> {
  if (builder.kind === 'docker') return 0;
  const created = footprint.layerIds.filter((id) => ![...footprint.reusedIds].some((full) => full.startsWith(id)));
  let removed = 0;
  for (const id of [...new Set(created)].reverse()) {
    const result = await runTool(builder, ['rmi', id]);
    if (result.code === 0) removed++;
  }
  return removed;
}

/**
 * Removes the working containers an interrupted build left behind: those created since
 * `before` was listed whose image is one the build started from or committed, so a
 * concurrent build from other images is never touched. buildah removes its own on SIGTERM
 * (it runs with --force-rm); this covers a builder that had to be killed.
 */
export async function removeLeftoverContainers(builder: ResolvedBuilder, before: Set<string>, footprint: BuildFootprint): Promise<string[]> {
  if (builder.kind === 'docker') return [];
  const fresh = (await listWorkingContainers(builder)).filter((container) => !before.has(container.id));
  if (fresh.length === 0) return [];
  const fromIds = await resolveImageIds(builder, footprint.fromRefs);
  const ours = fresh.filter(
    (container) =>
      fromIds.has(container.imageId) || footprint.fromRefs.has(container.imageName) || footprint.layerIds.some((id) => container.imageId.startsWith(id)),
  );
  const removed: string[] = [];
  for (const container of ours) {
    const args = builder.kind === 'buildah' ? ['rm', container.id] : ['rm', '--force', container.id];
    const result = await runTool(builder, args);
    if (result.code === 0) removed.push(container.id);
  }
  return removed;
}

async function resolveImageIds(builder: ResolvedBuilder, refs: Set<string>): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const ref of refs) {
    const args =
      builder.kind === 'buildah' ? ['inspect', '--type', 'image', '--format', '{{.FromImageID}}', ref] : ['image', 'inspect', '--format', '{{.Id}}', ref];
    const result = await runTool(builder, args);
    const id = result.stdout.trim();
    if (result.code === 0 && id) ids.add(id);
  }
  return ids;
}
