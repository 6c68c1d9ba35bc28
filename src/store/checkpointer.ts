import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/**
 * Small and often: a checkpoint flushes what was written since the last one, and a commit
 * meanwhile can wait for it. At 1,000 frames every half second, a stream of creates saw
 * commits of 40–110 ms at the thread's pace; at 250 every tenth of a second, next to none
 * (bench/results.md, "WAL checkpoints: small and often"). Fewer frames would fsync the
 * database for little.
 */
const BACKGROUND_CHECKPOINT_FRAMES = 250;
const INTERVAL_MS = 100;

/**
 * Checkpoints an SQLite database's WAL from a worker thread with its own connection, every
 * INTERVAL_MS once the WAL holds BACKGROUND_CHECKPOINT_FRAMES new frames. A checkpoint run
 * by a commit blocked the event loop for 10–40 ms each time; under a stream of creates that
 * was a third of their CPU (bench/results.md), now spent on another core. PASSIVE never
 * waits for the server's transactions. The thread stops when the database is closed.
 *
 * `onError` hears of a thread that died and of checkpoints failing for any reason but a
 * busy database (at most once a minute): the commit-time backstop keeps the WAL bounded
 * meanwhile, but an operator should know that commits are paying for checkpoints again.
 *
 * The worker's code is JavaScript given as source (`eval`), not a module file: a module
 * would be TypeScript under the test runner, and Node 20 does not carry the TypeScript
 * loader into worker threads.
 */
export function startCheckpointer(sqlite: SQLite.Database, file: string, onError: (error: Error) => void): void {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      file,
      intervalMs: INTERVAL_MS,
      minFrames: BACKGROUND_CHECKPOINT_FRAMES,
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
    },
  });
  worker.unref();
  worker.on('message', (message: { error?: string }) => {
    if (typeof message?.error === 'string') onError(new Error(message.error));
  });
  worker.on('error', onError);
  const close = sqlite.close.bind(sqlite);
  sqlite.close = (() => {
    worker.postMessage('stop');
    return close();
  }) as SQLite.Database['close'];
}

/*
 * PASSIVE only: it never takes the write lock, which the server's transactions (deferred:
 * they read, then write) could not wait for; a RESTART here made some of them fail with
 * SQLITE_BUSY. The server commits while a checkpoint copies frames, so short passes follow
 * the long first one until they have caught up. The WAL starts over only when a checkpoint
 * has caught up while no commit is under way; under a steady stream of commits that is the
 * commit-time backstop in database.ts, which then finds almost every frame already copied.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 5000');
const checkpoint = (mode) => db.pragma('wal_checkpoint(' + mode + ')')[0];
let reportedAt = 0;
const timer = setInterval(() => {
  try {
    const waiting = checkpoint('NOOP');
    if (waiting.log - waiting.checkpointed < workerData.minFrames) return;
    let progress = checkpoint('PASSIVE');
    for (let pass = 0; pass < 10 && progress.checkpointed < progress.log; pass++) progress = checkpoint('PASSIVE');
  } catch (error) {
    // Busy: the next tick tries again. Anything else is reported, once a minute at most.
    if (error && error.code === 'SQLITE_BUSY') return;
    if (Date.now() - reportedAt < 60000) return;
    reportedAt = Date.now();
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;
