import type { Secret } from '../domain/secrets.js';
import type { Encryptor } from './encryption.js';

/** A stored secret: its value encrypted and bound to its set and name. */
export interface EncryptedSecret {
  set_id: string;
  position: number;
  name: string;
  value_encrypted: string;
}

/**
 * Associated data of a secret's ciphertext: a ciphertext copied onto another set or
 * another name fails to decrypt. (The `revision_secret` wording predates secret sets;
 * sets migrated from revisions kept the revision's id, so their ciphertexts stay valid.)
 */
export const secretContext = (setId: string, name: string) => `revision_secret:${setId}:${name}`;

export function encryptSecretSet(encryptor: Encryptor, setId: string, secrets: readonly Secret[]): EncryptedSecret[] {
  return secrets.map((secret, position) => ({
    set_id: setId,
    position,
    name: secret.name,
    value_encrypted: encryptor.encrypt(secret.value, secretContext(setId, secret.name)),
  }));
}

export function decryptSecretSet(encryptor: Encryptor, entries: readonly EncryptedSecret[]): Secret[] {
  return entries.map((entry) => ({ name: entry.name, value: encryptor.decrypt(entry.value_encrypted, secretContext(entry.set_id, entry.name)) }));
}

/**
 * What identifies a set by content without telling anything about it: a keyed digest of
 * the names and values in order. Equal sets give equal digests, so revisions that keep
 * their secrets share one stored set.
 */
export function secretSetDigest(encryptor: Encryptor, secrets: readonly Secret[]): string {
  return encryptor.digest(JSON.stringify(secrets.map((secret) => [secret.name, secret.value])), 'secret-set');
}
