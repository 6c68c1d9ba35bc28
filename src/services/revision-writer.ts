import { randomUUID } from 'node:crypto';
import type { RevisionPlan } from '../domain/patch.js';
import { TERMINAL_STATUSES } from '../domain/revision-status.js';
import type { Executor } from '../store/database.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import { insertRevision, pruneRevisions, type RevisionRecord } from '../store/repositories/revisions.js';
import type { DeploymentRecords } from './deployment-records.js';

const FINISHED = [...TERMINAL_STATUSES];

/**
 * Adds the next revision of a deployment, with its secrets and resource spec stored once
 * per distinct content, makes it the latest, and drops the oldest finished revisions
 * beyond `keep`. Call inside a transaction that holds the deployment's row lock
 * (`lockDeployment`), so the revision number cannot be taken twice.
 */
export async function appendRevision(
  trx: Executor,
  records: DeploymentRecords,
  deployment: DeploymentRecord,
  plan: RevisionPlan,
  options: { now: string; keep: number },
): Promise<RevisionRecord> {
  const revision = await insertRevision(trx, {
    id: randomUUID(),
    deployment_id: deployment.id,
    source: deployment.source,
    source_revision_config: plan.config,
    resource_spec: plan.resourceSpec,
    secret_set_id: await records.storeSecrets(trx, deployment.id, plan.secrets, options.now),
    image_ref: plan.imageRef ?? null,
    created_at: options.now,
  });
  await records.inheritBuild(trx, revision);
  deployment.revision_count = revision.seq;
  deployment.latest_revision_id = revision.id;
  deployment.updated_at = options.now;
  await pruneRevisions(trx, deployment, options.keep, FINISHED, options.now);
  return revision;
}
