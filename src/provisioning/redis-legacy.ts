import { createHash } from 'node:crypto';
import type { createClient } from 'redis';

/**
 * Deployments provisioned by earlier Berth versions got a logical database number each
 * (recorded in a hash kept in the server's last database) and a user that could select
 * only that database. They keep working as they are; this removes one with its deployment.
 */

const RECORDS_KEY = 'berth:deployment-databases';

export function legacyRedisUser(deploymentId: string): string {
  const safe = /^[A-Za-z0-9_-]{1,64}$/.test(deploymentId) ? deploymentId : createHash('sha256').update(deploymentId, 'utf8').digest('hex').slice(0, 32);
  return `berth-${safe}`;
}

/** Removes the user (which disconnects its clients), empties its database and frees the number. */
export async function removeLegacyRedis(admin: ReturnType<typeof createClient>, deploymentId: string): Promise<void> {
  await admin.sendCommand(['ACL', 'DELUSER', legacyRedisUser(deploymentId)]);
  const records = Number((await admin.configGet('databases')).databases) - 1;
  await admin.select(records);
  const database = await admin.hGet(RECORDS_KEY, deploymentId);
  if (database === null || database === undefined) return;
  await admin.select(Number(database));
  await admin.flushDb();
  await admin.select(records);
  await admin.hDel(RECORDS_KEY, deploymentId);
}
