import { hkdfSync } from 'node:crypto';

/**
 * A key for one purpose, derived from Berth's master key (the encryption key) with
 * HKDF-SHA256. Each use gets its own key, so a key exposed by one feature (say, a
 * token-signing key in a core dump) reveals nothing about the master key or the others,
 * and nothing extra has to be configured or kept in step across replicas.
 */
export function deriveKey(master: Buffer, label: string, length = 32): Buffer {
  if (master.length < 32) throw new Error('the master key must be at least 32 bytes');
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), Buffer.from(`berth/${label}`, 'utf8'), length));
}
