import type { Logger } from 'pino';
import { UPLOAD_TOKEN_TTL_SECONDS, type UploadStore } from '../sources/uploads.js';
import { IN_PROGRESS_STATUSES } from '../domain/revision-status.js';
import type { Db } from '../store/database.js';
import { revisionsInStatus } from '../store/repositories/revisions.js';
import { releaseUploadArchives, uploadArchivesUntouchedSince } from '../store/repositories/upload-archives.js';

const SWEEP_MS = 5 * 60_000;
const IN_PROGRESS = [...IN_PROGRESS_STATUSES];

/**
 * Removes uploaded archives nothing will build: ones never sent in a PATCH once their
 * token expired, and ones whose revision ended without building them (skipped,
 * interrupted). Runs beside the engine, every few minutes. Then makes the pending-upload
 * records agree with the files, so that no crash can leave bytes counted forever: records of
 * archives no longer there, and reservations of uploads that stopped (a live upload ends
 * well within a token's lifetime), no longer count.
 */
export function startUploadSweeper(db: Db, uploads: UploadStore, logger: Logger): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const isReferenced = async (objectPath: string, deploymentId: string) =>
    (await revisionsInStatus(db, deploymentId, IN_PROGRESS)).some((r) => r.source_revision_config.source_tarball_path === objectPath);
  const sweep = () => {
    running ??= sweepOnce(db, uploads, isReferenced)
      .then((removed) => {
        if (removed > 0) logger.info({ removed }, 'removed uploaded archives nothing will build');
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

async function sweepOnce(db: Db, uploads: UploadStore, isReferenced: (objectPath: string, deploymentId: string) => Promise<boolean>): Promise<number> {
  const now = Date.now();
  const { removed } = await uploads.sweep(now, isReferenced);
  await releaseUploadArchives(db, removed);
  const stale = await uploadArchivesUntouchedSince(db, new Date(now - UPLOAD_TOKEN_TTL_SECONDS * 1000).toISOString());
  const gone: string[] = [];
  for (const row of stale) {
    if (!row.stored || (await uploads.resolve(row.deploymentId, row.objectPath)) === null) gone.push(row.objectPath);
  }
  await releaseUploadArchives(db, gone);
  return removed.length;
}
