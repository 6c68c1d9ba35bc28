import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PREFIX = 'berth_';

/** A new API key: high entropy, recognisable prefix so leaked keys can be found by scanners. */
export function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The shape of a generated key: the prefix and 43 base64url characters. */
const GENERATED_SHAPE = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{43}$`);

/**
 * Whether a key has the shape of one Berth generates, whose 256 random bits no amount of
 * guessing finds: looking such a key up tells a guesser nothing it could use. (A key an
 * operator configured could be weaker; the failed-authentication budget protects those.)
 */
export function hasGeneratedShape(key: string): boolean {
  return GENERATED_SHAPE.test(key);
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
