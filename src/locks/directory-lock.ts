import lockfile from 'proper-lockfile';

/** Why a locked piece of work did not run to its end: the caller's signal, or the lock lost to another process. */
export class DirectoryLockError extends Error {
  override name = 'DirectoryLockError';
  constructor(readonly kind: 'aborted' | 'lost') {
    super(kind === 'aborted' ? 'aborted while waiting for the lock' : 'the lock was lost (another process took it over)');
  }
}

/** Lock holders of this process, by directory: the tail of each one's queue. */
const queues = new Map<string, Promise<void>>();

const RETRY_MS = 250;
/** A lock file not refreshed for this long belongs to a process that died. */
const STALE_MS = 20_000;

export interface LockOptions {
  signal?: AbortSignal;
  /** Called once if the lock is held by another Berth process and this one has to wait. */
  onWait?: () => void;
}

/**
 * Runs `work` while holding the directory's lock: first a queue within this process, then a
 * lock file beside the directory (`<dir>.lock`, made with mkdir by proper-lockfile and kept
 * fresh while held) so that two Berth processes sharing it never write it at once. A holder
 * that dies leaves a lock that turns stale after 20 s. `work` gets a signal that also fires
 * if the lock is lost (its file was removed or went stale). Throws DirectoryLockError when
 * the caller's signal stops the wait or the lock is lost.
 */
export async function withDirectoryLock<T>(dir: string, options: LockOptions, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const previous = queues.get(dir) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => mine);
  queues.set(dir, tail);
  try {
    await untilAborted(previous, options.signal);
    return await withLockFile(dir, options, work);
  } finally {
    release();
    if (queues.get(dir) === tail) queues.delete(dir);
  }
}

async function withLockFile<T>(dir: string, options: LockOptions, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const lost = new AbortController();
  let waited = false;
  let unlock: (() => Promise<void>) | undefined;
  while (!unlock) {
    try {
      unlock = await lockfile.lock(dir, {
        lockfilePath: `${dir}.lock`,
        realpath: false,
        stale: STALE_MS,
        update: STALE_MS / 4,
        retries: 0,
        onCompromised: () => lost.abort(),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
      if (!waited) options.onWait?.();
      waited = true;
      await untilAborted(new Promise((resolve) => setTimeout(resolve, RETRY_MS)), options.signal);
    }
  }
  const signal = options.signal ? AbortSignal.any([options.signal, lost.signal]) : lost.signal;
  try {
    const result = await work(signal);
    if (lost.signal.aborted) throw lockLost();
    return result;
  } catch (error) {
    if (lost.signal.aborted && !options.signal?.aborted) throw lockLost();
    throw error;
  } finally {
    if (!lost.signal.aborted) await unlock().catch(() => undefined);
  }
}

function lockLost(): DirectoryLockError {
  return new DirectoryLockError('lost');
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new DirectoryLockError('aborted'));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new DirectoryLockError('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
