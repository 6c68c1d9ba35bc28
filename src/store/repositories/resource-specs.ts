import { createHash, randomUUID } from 'node:crypto';
import { canonicalJson } from '../../domain/canonical-json.js';
import type { ResourceSpec } from '../../domain/deployment-config.js';
import type { Executor } from '../database.js';
import { preparedQuery } from '../prepared.js';

/**
 * The id of the deployment's stored resource spec with this content, stored now if it is
 * new. Revisions refer to it instead of each keeping a copy. A deployment inserted in the
 * same transaction has none stored yet, so nothing is looked up for it.
 */
export async function resourceSpecId(
  db: Executor,
  deploymentId: string,
  spec: ResourceSpec,
  now: string,
  { deploymentIsNew = false }: { deploymentIsNew?: boolean } = {},
): Promise<string> {
  const text = canonicalJson(spec);
  const digest = createHash('sha256').update(text).digest('hex');
  if (!deploymentIsNew) {
    const [existing] = await selectSpecByDigest(db, deploymentId, digest);
    if (existing) return existing.id;
  }
  const id = randomUUID();
  await insertSpec(db, id, deploymentId, digest, text, now);
  return id;
}

const selectSpecByDigest = preparedQuery((db, deploymentId: string, digest: string) =>
  db.selectFrom('resource_specs').select('id').where('deployment_id', '=', deploymentId).where('digest', '=', digest),
);

const insertSpec = preparedQuery((db, id: string, deploymentId: string, digest: string, spec: string, createdAt: string) =>
  db.insertInto('resource_specs').values({ id, deployment_id: deploymentId, digest, spec, created_at: createdAt }),
);
