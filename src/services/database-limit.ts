import { bringsItsOwn, databaseLimitMessage, type ProvisionedKind } from '../domain/provisioning.js';
import { fail } from '../domain/errors.js';
import type { Executor } from '../store/database.js';
import { countWorkspaceResources } from '../store/repositories/resources.js';

/** What this server provisions per deployment (BERTH_DEPLOYMENT_POSTGRES_URL, _REDIS_URL), and how many per workspace at most. */
export interface ProvisioningPolicy {
  kinds: readonly ProvisionedKind[];
  perWorkspace: number;
}

/**
 * Refuses a new deployment (409) when its workspace is already known to be full for a
 * kind it would get. Only a check up front: deployments created at the same moment can
 * all pass it, and the engine, which counts and reserves in one transaction, ends those
 * beyond the limit CREATE_FAILED with the same message.
 */
export async function refuseOverDatabaseLimit(
  db: Executor,
  policy: ProvisioningPolicy | undefined,
  workspaceId: string,
  secrets: readonly { name: string }[],
): Promise<void> {
  if (!policy) return;
  for (const kind of policy.kinds) {
    if (bringsItsOwn(kind, secrets)) continue;
    if ((await countWorkspaceResources(db, workspaceId, kind)) >= policy.perWorkspace) {
      throw fail('database_limit_reached', databaseLimitMessage(kind, policy.perWorkspace));
    }
  }
}
