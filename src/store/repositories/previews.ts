import { type PreviewOrigin, previewKey } from '../../domain/previews.js';
import type { Executor } from '../database.js';
import { DEPLOYMENT_COLUMNS, type DeploymentRecord, decodeDeployment } from './deployments.js';

/** The parent's live (not being deleted) preview of a pull request or branch, if any. */
export async function findLivePreview(db: Executor, parentId: string, origin: PreviewOrigin): Promise<DeploymentRecord | undefined> {
  const row = await db
    .selectFrom('deployments')
    .select(DEPLOYMENT_COLUMNS)
    .where('parent_deployment_id', '=', parentId)
    .where('preview_key', '=', previewKey(origin))
    .executeTakeFirst();
  return row && decodeDeployment(row);
}

/** The parent's previews, being deleted or not, oldest first. */
export async function previewsOf(db: Executor, parentId: string): Promise<DeploymentRecord[]> {
  const rows = await db.selectFrom('deployments').select(DEPLOYMENT_COLUMNS).where('parent_deployment_id', '=', parentId).orderBy('created_at').execute();
  return rows.map(decodeDeployment);
}

/**
 * Every preview not being deleted, in any workspace, with its parent's settings (the idle
 * sweep); `orphaned` when the parent is gone or being deleted.
 */
export async function livePreviews(db: Executor): Promise<{ preview: DeploymentRecord; idleMinutes: number | null; orphaned: boolean }[]> {
  const rows = await db
    .selectFrom('deployments')
    .leftJoin('deployments as parent', 'parent.id', 'deployments.parent_deployment_id')
    .select(DEPLOYMENT_COLUMNS.map((column) => `deployments.${column}` as const))
    .select(['parent.preview_settings as parent_settings', 'parent.status as parent_status'])
    .where('deployments.parent_deployment_id', 'is not', null)
    .where('deployments.status', '!=', 'AWAITING_DELETE')
    .execute();
  return rows.map(({ parent_settings, parent_status, ...row }) => ({
    preview: decodeDeployment(row),
    idleMinutes: parent_settings === null ? null : (JSON.parse(parent_settings) as { idle_minutes: number }).idle_minutes,
    orphaned: parent_status === null || parent_status === 'AWAITING_DELETE',
  }));
}

/**
 * Deployments of an integration with preview settings, not being deleted and not previews
 * themselves: the parents a pull request or branch of its repositories may preview. Those
 * with previews turned off are included, so that a closed pull request or a deleted
 * branch still removes the previews made before.
 */
export async function previewParents(db: Executor, integrationId: string): Promise<DeploymentRecord[]> {
  const rows = await db
    .selectFrom('deployments')
    .select(DEPLOYMENT_COLUMNS)
    .where('integration_id', '=', integrationId)
    .where('status', '!=', 'AWAITING_DELETE')
    .where('parent_deployment_id', 'is', null)
    .where('preview_settings', 'is not', null)
    .execute();
  return rows.map(decodeDeployment);
}

/** A new commit of a preview: its origin's head and the time idle removal counts from. */
export async function touchPreview(db: Executor, id: string, origin: PreviewOrigin, at: string): Promise<void> {
  await db
    .updateTable('deployments')
    .set({ preview_origin: JSON.stringify(origin), preview_active_at: at, updated_at: at })
    .where('id', '=', id)
    .execute();
}

/** A name taken in the workspace (names are unique there without regard to case). */
export async function nameTaken(db: Executor, workspaceId: string, name: string): Promise<boolean> {
  const row = await db
    .selectFrom('deployments')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb(eb.fn('lower', ['name']), '=', name.toLowerCase()))
    .executeTakeFirst();
  return row !== undefined;
}

/** A removed preview gives up its key at once, so that a pull request reopened before the engine deleted it gets a new one. */
export async function releasePreviewKey(db: Executor, id: string): Promise<void> {
  await db.updateTable('deployments').set({ preview_key: null }).where('id', '=', id).execute();
}
