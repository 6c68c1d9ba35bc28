import { lastOutputLine, runTool } from '../containers/commands.js';
import { bareId, type ImageStoreTool, localImageId } from './image-store.js';

export type LocalRemoval = 'removed' | 'absent' | 'moved';

/**
 * Removes the name `reference` from the store if, and only if, it still points at the image
 * `id`: a name can be moved to another image (a tag written again, a pull of a newer image),
 * and that image is not ours to remove. The image itself goes with its last name; while
 * another name still points at it only this name goes (`rmi` without force), and an image a
 * container still uses stays (the removal fails, to be tried again).
 */
export async function removeLocalImage(tool: ImageStoreTool, reference: string, id: string): Promise<LocalRemoval> {
  const current = await localImageId(tool, reference);
  if (current === null) return (await removeIfNameless(tool, id)) ? 'removed' : 'absent';
  if (current !== bareId(id)) {
    await removeIfNameless(tool, id);
    return 'moved';
  }
  const removed = await runTool(tool, ['rmi', reference]);
  if (removed.code === 0) return 'removed';
  if ((await localImageId(tool, reference)) === null) return 'absent';
  throw new Error(`could not remove ${reference} from the ${tool.kind} image store: ${lastOutputLine(removed)}`);
}

/**
 * The built image itself, when its name was moved away and nothing names it any more (podman
 * and docker, which can say so; buildah's stores are left to its own pruning). An image that
 * has a name, whoever gave it, stays.
 */
async function removeIfNameless(tool: ImageStoreTool, id: string): Promise<boolean> {
  if (tool.kind === 'buildah') return false;
  const inspected = await runTool(tool, ['image', 'inspect', '--format', '{{json .RepoTags}}', bareId(id)]);
  if (inspected.code !== 0) return false;
  const names = JSON.parse(inspected.stdout.trim() || 'null') as unknown;
  if (Array.isArray(names) && names.length > 0) return false;
  const removed = await runTool(tool, ['rmi', bareId(id)]);
  return removed.code === 0;
}
