import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PREFIX = 'berth_';

/** A new API key: high entropy, recognisable prefix so leaked keys can be found by scanners. */
export function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** Keys are stored only as this digest; the plain key is shown once, at creation. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * What may be shown of a key after creation: its last 4 characters (after the public
 * prefix of generated keys), enough to tell keys apart and too little to help guess one,
 * even next to its unsalted digest.
 */
export function keyHint(key: string): string {
  return `${key.startsWith(KEY_PREFIX) ? KEY_PREFIX : ''}…${key.slice(-4)}`;
}
