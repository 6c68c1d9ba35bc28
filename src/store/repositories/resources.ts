import type { Executor } from '../database.js';
import type { Database } from '../schema.js';

export type ResourceKind = Database['deployment_resources']['kind'];

export async function saveResource(db: Executor, row: Database['deployment_resources']): Promise<void> {
  await db
    .insertInto('deployment_resources')
    .values(row)
    .onConflict((oc) => oc.columns(['deployment_id', 'kind']).doUpdateSet({ uri_encrypted: row.uri_encrypted }))
    .execute();
}

export async function resourcesOf(db: Executor, deploymentId: string): Promise<Database['deployment_resources'][]> {
  return db.selectFrom('deployment_resources').selectAll().where('deployment_id', '=', deploymentId).execute();
}
