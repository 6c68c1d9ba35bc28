import type { Encryptor } from '../security/encryption.js';
import { resourceUriContext } from '../security/resource-uris.js';
import type { ResourceKind, ResourceRecord } from '../store/repositories/resources.js';

/** What the container gets for each. */
const VARIABLE: Record<ResourceKind, string> = { postgres: 'POSTGRES_URI', redis: 'REDIS_URI' };

/**
 * The variables a deployment's containers get for what Berth provisioned for it, on this
 * host or on a listener: POSTGRES_URI, REDIS_URI and REDIS_KEY_PREFIX (the prefix its
 * Redis user is limited to). Resources not created yet give nothing.
 */
export function provisionedVariables(encryptor: Encryptor, rows: readonly ResourceRecord[]): { name: string; value: string }[] {
  const variables: { name: string; value: string }[] = [];
  for (const row of rows) {
    if (!row.ready) continue;
    variables.push({ name: VARIABLE[row.kind], value: encryptor.decrypt(row.uri_encrypted, resourceUriContext(row.deployment_id, row.kind)) });
    if (row.kind === 'redis' && row.names?.prefix) variables.push({ name: 'REDIS_KEY_PREFIX', value: row.names.prefix });
  }
  return variables;
}
