import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { deadline } from './deadline.js';

const LOCK_TARGET = path.join(os.tmpdir(), 'berth-test-locks', 'container-builds');

/**
 * Test files that build images or time real processes take turns: run side by side on a
 * two-core machine they starve each other into timeouts, and builds of one base image see
 * each other's working containers. Taken in a suite's `before`, released in its `after`;
 * other test files keep running in parallel meanwhile.
 */
export async function takeMachineTurn(): Promise<() => Promise<void>> {
  await mkdir(path.dirname(LOCK_TARGET), { recursive: true });
  await writeFile(LOCK_TARGET, '', { flag: 'a' });
  // Retries outlast the hook's timeout, which is what ends a wait for a turn that never comes.
  const retries = Math.ceil(deadline(TURN_TIMEOUT_MS) / 1000);
  return lockfile.lock(LOCK_TARGET, { stale: 30_000, update: 5_000, retries: { retries, minTimeout: 500, maxTimeout: 2000 } });
}

/**
 * How long a suite may wait for its turn (a base, scaled by BERTH_TEST_DEADLINE_FACTOR):
 * several heavy suites may be ahead of it. scripts/run-tests.ts adds it to the limit of
 * every file that takes a turn.
 */
export const TURN_TIMEOUT_MS = 30 * 60_000;

/** Takes the turn before the suite's other hooks run and gives it back after all of them. */
export function holdMachineTurnForSuite(hooks: { before: typeof import('node:test').before; after: typeof import('node:test').after }): void {
  let release: (() => Promise<void>) | undefined;
  hooks.before(
    async () => {
      release = await takeMachineTurn();
    },
    { timeout: deadline(TURN_TIMEOUT_MS) },
  );
  hooks.after(async () => {
    await release?.();
  });
}
