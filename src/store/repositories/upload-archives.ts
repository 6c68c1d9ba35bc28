import { PostgresAdapter, sql } from 'kysely';
import type { PendingUploads } from '../../domain/upload-quota.js';
import type { DeploymentStatus } from '../../domain/deployment-status.js';
import { inBatches } from '../batches.js';
import type { Executor } from '../database.js';

const onPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * Starts a reservation (call first in its transaction): on PostgreSQL it takes the
 * workspace's row lock, so that reservations of one workspace follow one another and two
 * cannot both pass a limit they pass together (`NO KEY UPDATE`, which creating deployments
 * of the workspace does not wait for). SQLite runs one writing transaction at a time, and
 * the reservation's first write takes that lock. Then reads the deployment's status, with a
 * key-share lock on PostgreSQL so it cannot be deleted until the transaction ends; undefined
 * when the deployment is not there.
 */
export async function lockForUploadReservation(db: Executor, workspaceId: string, deploymentId: string): Promise<DeploymentStatus | undefined> {
  const postgres = onPostgres(db);
  if (postgres) await db.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forNoKeyUpdate().execute();
  let query = db.selectFrom('deployments').select('status').where('id', '=', deploymentId).where('workspace_id', '=', workspaceId);
  if (postgres) query = query.forKeyShare();
  return (await query.executeTakeFirst())?.status;
}

/** Records (or grows) what one upload reserves. */
export async function saveUploadReservation(
  db: Executor,
  reservation: { objectPath: string; deploymentId: string; workspaceId: string; bytes: number; now: string },
): Promise<void> {
  await db
    .insertInto('upload_archives')
    .values({
      object_path: reservation.objectPath,
      deployment_id: reservation.deploymentId,
      workspace_id: reservation.workspaceId,
      bytes: reservation.bytes,
      stored: 0,
      updated_at: reservation.now,
    })
    .onConflict((conflict) => conflict.column('object_path').doUpdateSet({ bytes: reservation.bytes, updated_at: reservation.now }))
    .execute();
}

/** Bytes pending for the deployment and for its whole workspace. */
export async function pendingUploadBytes(db: Executor, workspaceId: string, deploymentId: string): Promise<PendingUploads> {
  const row = await db
    .selectFrom('upload_archives')
    .select([
      sql<string | number | null>`sum(bytes)`.as('workspace'),
      sql<string | number | null>`sum(case when deployment_id = ${deploymentId} then bytes else 0 end)`.as('deployment'),
    ])
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  return { workspace: Number(row?.workspace ?? 0), deployment: Number(row?.deployment ?? 0) };
}

/** The archive is in place: it now counts with its real size. */
export async function markUploadStored(db: Executor, objectPath: string, bytes: number, now: string): Promise<void> {
  await db.updateTable('upload_archives').set({ bytes, stored: 1, updated_at: now }).where('object_path', '=', objectPath).execute();
}

/** Archives removed (built, expired, refused): they no longer count. */
export async function releaseUploadArchives(db: Executor, objectPaths: readonly string[]): Promise<void> {
  await inBatches(objectPaths, async (batch) => {
    await db.deleteFrom('upload_archives').where('object_path', 'in', batch).execute();
  });
}

export interface UploadArchiveRow {
  objectPath: string;
  deploymentId: string;
  stored: boolean;
}

/** Rows not touched since `before`, for the sweeper to check against the files. */
export async function uploadArchivesUntouchedSince(db: Executor, before: string): Promise<UploadArchiveRow[]> {
  const rows = await db.selectFrom('upload_archives').select(['object_path', 'deployment_id', 'stored']).where('updated_at', '<', before).execute();
  return rows.map((row) => ({ objectPath: row.object_path, deploymentId: row.deployment_id, stored: row.stored === 1 }));
}
