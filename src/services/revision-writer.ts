import { randomUUID } from 'node:crypto';
import type { RevisionPlan } from '../domain/patch.js';
import type { Executor } from '../store/database.js';
import { type DeploymentRow, updateDeployment } from '../store/repositories/deployments.js';
import { insertRevision, type RevisionRow } from '../store/repositories/revisions.js';
import type { DeploymentRecords } from './deployment-records.js';

/**
 * Adds the next revision of a deployment, with its encrypted secrets, and makes it the
 * latest. Call inside a transaction that holds the deployment's row lock
 * (`lockDeployment`), so the revision number cannot be taken twice.
 */
export async function appendRevision(
  trx: Executor,
  records: DeploymentRecords,
  deployment: DeploymentRow,
  plan: RevisionPlan,
  now: string,
): Promise<RevisionRow> {
  const row: RevisionRow = {
    id: randomUUID(),
    deployment_id: deployment.id,
    seq: deployment.revision_count + 1,
    source: deployment.source,
    source_revision_config: JSON.stringify(plan.config),
    resource_spec: JSON.stringify(plan.resourceSpec),
    status: 'CREATING',
    status_message: null,
    remote_reconciled: 0,
    image_ref: plan.imageRef ?? null,
    runtime_handle: null,
    url: null,
    created_at: now,
    updated_at: now,
  };
  await insertRevision(trx, row, records.encryptSecrets(row.id, plan.secrets));
  await updateDeployment(trx, deployment.id, { revision_count: row.seq, latest_revision_id: row.id, updated_at: now });
  deployment.revision_count = row.seq;
  deployment.latest_revision_id = row.id;
  return row;
}
