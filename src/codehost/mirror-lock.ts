import { DirectoryLockError, type LockOptions, withDirectoryLock } from '../locks/directory-lock.js';
import { CodehostError } from './errors.js';

/** The mirror's directory lock (src/locks/directory-lock.ts), its failures told as git's. */
export async function withMirrorLock<T>(mirrorDir: string, options: LockOptions, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  try {
    return await withDirectoryLock(mirrorDir, options, work);
  } catch (error) {
    if (!(error instanceof DirectoryLockError)) throw error;
    if (error.kind === 'aborted') throw new CodehostError('aborted', 'git: aborted while waiting for the repository mirror');
    throw new CodehostError('failed', 'git: the lock on the repository mirror was lost (another process took it over); try again');
  }
}
