import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fail } from '../domain/errors.js';

const FORMAT = 'v1';

/**
 * AES-256-GCM for values kept at rest (deployment secrets, OAuth client secrets).
 * `context` is bound as additional authenticated data, so a ciphertext copied onto
 * another row (another secret name, another provider) fails to decrypt.
 */
export class Encryptor {
  readonly #key: Buffer;
  readonly #digestKey: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
    this.#key = key;
    // A key of its own for digests, derived so that no digest can ever help with the cipher.
    this.#digestKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'berth digest key', 32));
  }

  /** A keyed digest (HMAC-SHA256) of a value: equal values give equal digests, and nothing else can be learnt from it. */
  digest(value: string, purpose: string): string {
    return createHmac('sha256', this.#digestKey).update(`${purpose}\u0000${value}`).digest('hex');
  }

  encrypt(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${FORMAT}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /**
   * Fails with `secrets_unreadable` (503) when the value was written under another key or
   * moved to another row: the operator's key is wrong, which no client can fix.
   */
  decrypt(stored: string, context: string): string {
    const [format, payload] = stored.split(':', 2);
    if (format !== FORMAT || !payload) throw unreadable();
    try {
      const raw = Buffer.from(payload, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      throw unreadable();
    }
  }
}

const unreadable = () =>
  fail('secrets_unreadable', "Stored secrets cannot be read with this server's encryption key; its operator checks BERTH_ENCRYPTION_KEY.");

/** Accepts 32 bytes as 64 hex characters or as base64; anything else is a boot error. */
export function parseEncryptionKey(value: string): Buffer {
  const trimmed = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  const decoded = Buffer.from(trimmed, 'base64');
  if (decoded.length === 32) return decoded;
  throw new Error('BERTH_ENCRYPTION_KEY must be 32 bytes, given as 64 hex characters or as base64');
}

/**
 * The key from the environment, else the key file in the data directory (created with
 * mode 0600 on first start). Several processes sharing one PostgreSQL must share the key,
 * so server mode should set BERTH_ENCRYPTION_KEY.
 */
export function loadEncryptionKey(envValue: string | undefined, dataDir: string): { key: Buffer; source: 'env' | 'file' | 'generated' } {
  if (envValue) return { key: parseEncryptionKey(envValue), source: 'env' };
  const file = path.join(dataDir, 'encryption.key');
  try {
    return { key: parseEncryptionKey(fs.readFileSync(file, 'utf8')), source: 'file' };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    // 'wx' fails if another process created the file meanwhile; then we read theirs.
    fs.writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    return { key, source: 'generated' };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { key: parseEncryptionKey(fs.readFileSync(file, 'utf8')), source: 'file' };
  }
}
