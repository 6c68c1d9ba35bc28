import { lstat, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/** Bytes of all files under `dir` (0 if it does not exist); symbolic links are not followed. */
export async function directorySize(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await directorySize(full);
    else
      total += await lstat(full).then(
        (info) => info.size,
        () => 0,
      );
  }
  return total;
}

export async function isDirectory(dir: string): Promise<boolean> {
  return stat(dir).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

/** Whether `dir` is absent or an empty directory (then a checkout may take its place). */
export async function isAbsentOrEmptyDirectory(dir: string): Promise<boolean> {
  try {
    const info = await stat(dir);
    return info.isDirectory() && (await readdir(dir)).length === 0;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/**
 * Removes what a git process killed in the middle of a fetch leaves in a bare repository:
 * lock files that would make every later fetch fail ("Unable to create '…lock': File
 * exists") and half-written packs. Call only while holding the mirror's lock, when no git
 * process can be writing it.
 */
export async function removeGitLeftovers(gitDir: string): Promise<void> {
  const removals: Promise<void>[] = [];
  const removeLocks = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await removeLocks(full);
      else if (entry.name.endsWith('.lock')) removals.push(rm(full, { force: true }));
    }
  };
  await removeLocks(path.join(gitDir, 'refs'));
  for (const name of ['packed-refs.lock', 'config.lock', 'HEAD.lock', 'shallow.lock', 'index.lock', 'gc.pid']) {
    removals.push(rm(path.join(gitDir, name), { force: true }));
  }
  const packDir = path.join(gitDir, 'objects', 'pack');
  for (const name of await readdir(packDir).catch(() => [] as string[])) {
    if (name.startsWith('tmp_') || name.startsWith('.tmp-')) removals.push(rm(path.join(packDir, name), { force: true }));
  }
  await Promise.all(removals);
}
