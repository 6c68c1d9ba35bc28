import type { Logger } from 'pino';
import type { UploadStore } from '../build/uploads.js';
import { IN_PROGRESS_STATUSES } from '../domain/revision-status.js';
import type { Db } from '../store/database.js';
import { revisionsInStatus } from '../store/repositories/revisions.js';

const SWEEP_MS = 5 * 60_000;
const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/**
 * Removes uploaded archives nothing will build: ones never sent in a PATCH once their
 * token expired, and ones whose revision ended without building them (skipped,
 * interrupted). Runs beside the engine, every few minutes.
 */
export function startUploadSweeper(db: Db, uploads: UploadStore, logger: Logger): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const isReferenced = async (objectPath: string, deploymentId: string) =>
    (await revisionsInStatus(db, deploymentId, IN_PROGRESS)).some((r) => r.source_revision_config.source_tarball_path === objectPath);
  const sweep = () => {
    running ??= uploads
      .sweep(Date.now(), isReferenced)
      .then(({ removed }) => {
        if (removed.length > 0) logger.info({ removed: removed.length }, 'removed uploaded archives nothing will build');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'sweeping uploaded archives failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(sweep, SWEEP_MS);
  timer.unref();
  sweep();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
