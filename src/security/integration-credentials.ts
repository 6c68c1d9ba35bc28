import type { IntegrationCredentials } from '../domain/integrations.js';
import type { Encryptor } from './encryption.js';

/** Bound to the integration: a ciphertext moved onto another integration fails to decrypt. */
export const context = (integrationId: string) => `codehost_credentials:${integrationId}`;

export function encryptCredentials(encryptor: Encryptor, integrationId: string, credentials: IntegrationCredentials): string {
  return encryptor.encrypt(JSON.stringify(credentials), context(integrationId));
}

export function decryptCredentials(encryptor: Encryptor, integrationId: string, stored: string | null): IntegrationCredentials {
  return stored === null ? {} : (JSON.parse(encryptor.decrypt(stored, context(integrationId))) as IntegrationCredentials);
}
