import type { Encryptor } from './encryption.js';

/** Associated data of a revision's langgraph.json `env`: the ciphertext opens on that revision's row only. */
export const configEnvContext = (revisionId: string) => `revision_config_env:${revisionId}`;

/** langgraph.json's `env` of a revision, encrypted as secrets are (an env file may hold credentials); null when empty. */
export function encryptConfigEnv(encryptor: Encryptor, revisionId: string, env: Record<string, string>): string | null {
  if (Object.keys(env).length === 0) return null;
  return encryptor.encrypt(JSON.stringify(env), configEnvContext(revisionId));
}

export function decryptConfigEnv(encryptor: Encryptor, revisionId: string, stored: string | null): Record<string, string> {
  if (stored === null) return {};
  return JSON.parse(encryptor.decrypt(stored, configEnvContext(revisionId))) as Record<string, string>;
}
