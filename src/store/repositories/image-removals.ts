import { type SqlBool, sql } from 'kysely';
import type { Executor } from '../database.js';
import { escapeLike } from '../like.js';
import type { Database } from '../schema.js';

/** A built image to remove from wherever Berth put it (migration 014; the columns are described in store/schema.ts). */
export type ImageRemovalRecord = Omit<Database['image_removals'], 'last_error' | 'created_at'>;

/**
 * Queues the images Berth built for revisions of a deployment that are about to be deleted:
 * the given revisions, or all of them (the deployment's delete; then only while `leaseOwner`
 * holds the deployment). Call in the transaction that deletes them, before the delete, so the
 * queue and the removal commit together. Revisions that did not build their image (image
 * revisions, redeploys of an earlier build) record no identity and queue nothing: the image
 * goes with the revision that built it.
 */
export async function queueImageRemovals(
  db: Executor,
  target: { deploymentId: string; revisionIds?: readonly string[]; leaseOwner?: string },
  now: string,
): Promise<void> {
  if (target.revisionIds?.length === 0) return;
  await db
    .insertInto('image_removals')
    .columns(['image_ref', 'workspace_id', 'deployment_id', 'image_id', 'image_digest', 'next_attempt_at', 'created_at'])
    .expression((eb) => {
      let built = eb
        .selectFrom('revisions as r')
        .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
        .select((s) => [
          sql<string>`${s.ref('r.image_ref')}`.as('image_ref'),
          'd.workspace_id',
          'r.deployment_id',
          'r.image_id',
          'r.image_digest',
          sql<string>`${now}`.as('next_attempt_at'),
          sql<string>`${now}`.as('created_at'),
        ])
        .where('r.deployment_id', '=', target.deploymentId)
        .where('r.image_ref', 'is not', null)
        .where((w) => w.or([w('r.image_id', 'is not', null), w('r.image_digest', 'is not', null)]));
      if (target.revisionIds) built = built.where('r.id', 'in', target.revisionIds);
      if (target.leaseOwner !== undefined) built = built.where('d.lease_owner', '=', target.leaseOwner);
      return built;
    })
    .onConflict((oc) => oc.column('image_ref').doNothing())
    .execute();
}

/** Removals whose time has come, oldest first. */
export async function dueImageRemovals(db: Executor, now: string, limit: number): Promise<ImageRemovalRecord[]> {
  return db
    .selectFrom('image_removals')
    .select(['image_ref', 'workspace_id', 'deployment_id', 'image_id', 'image_digest', 'attempts', 'next_attempt_at'])
    .where('next_attempt_at', '<=', now)
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute();
}

/**
 * Takes a removal for this process until `until` (compare-and-set on its time), so replicas
 * do not remove the same image at once; a process that dies holding it leaves it to be taken
 * again then. False when another process took it first.
 */
export async function claimImageRemoval(db: Executor, removal: ImageRemovalRecord, until: string): Promise<boolean> {
  const result = await db
    .updateTable('image_removals')
    .set({ next_attempt_at: until })
    .where('image_ref', '=', removal.image_ref)
    .where('next_attempt_at', '=', removal.next_attempt_at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function finishImageRemoval(db: Executor, imageRef: string): Promise<void> {
  await db.deleteFrom('image_removals').where('image_ref', '=', imageRef).execute();
}

/** Tries again at `at`; `failure` (counted as an attempt) says why the last one failed, null when the image was only still in use. */
export async function postponeImageRemoval(db: Executor, imageRef: string, at: string, failure: string | null): Promise<void> {
  await db
    .updateTable('image_removals')
    .set((eb) => ({
      next_attempt_at: at,
      ...(failure === null ? {} : { attempts: eb('attempts', '+', 1), last_error: failure.slice(0, 1000) }),
    }))
    .where('image_ref', '=', imageRef)
    .execute();
}

/**
 * Whether a revision of the workspace still runs or names the image: its own image (a
 * redeploy reuses the built one's name) or the `image_uri` of an image revision. Only the
 * workspace's revisions can: the engine and the API refuse another workspace's image
 * (registry/image-ownership.ts).
 */
export async function isImageInUse(db: Executor, workspaceId: string, imageRef: string): Promise<boolean> {
  const pattern = `%${escapeLike(JSON.stringify(imageRef))}%`;
  const rows = await db
    .selectFrom('revisions as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select(['r.image_ref', 'r.source_revision_config'])
    .where('d.workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('r.image_ref', '=', imageRef), sql<SqlBool>`${eb.ref('r.source_revision_config')} like ${pattern} escape '\\'`]))
    .execute();
  // The LIKE finds candidates; the decoded configuration decides (the name may appear in another field).
  return rows.some((row) => row.image_ref === imageRef || (JSON.parse(row.source_revision_config) as { image_uri?: unknown }).image_uri === imageRef);
}
