import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Short-lived capability tokens for links that carry their own authorisation (the
 * source-upload URL, and other one-off links): `v1.<claims>.<signature>`, both parts
 * base64url, the signature an HMAC-SHA256 of `v1.<claims>` under the signer's key.
 *
 * The claims say what the token is for (`purpose`), until when (`exp`, seconds since the
 * epoch), a random id (`jti`, so a single-use token can be recorded as spent), and the
 * fields it is bound to (`bound`, e.g. the deployment id and object path). Verification
 * checks the signature in constant time before anything in the claims is trusted.
 */

const VERSION = 'v1';
/** Tokens travel in URLs; anything much longer than we ever issue is not ours. */
const MAX_TOKEN_LENGTH = 4096;
const SIGNATURE_BYTES = 32;

export interface TokenClaims {
  purpose: string;
  /** Expiry, whole seconds since the epoch. */
  exp: number;
  /** Random id, unique per token. */
  jti: string;
  bound: Record<string, string>;
}

export type TokenFailure = 'malformed' | 'bad_signature' | 'expired' | 'wrong_purpose' | 'wrong_binding';

const FAILURE_MESSAGES: Record<TokenFailure, string> = {
  malformed: 'the token is malformed',
  bad_signature: 'the token signature is not valid',
  expired: 'the token has expired',
  wrong_purpose: 'the token was issued for another purpose',
  wrong_binding: 'the token was issued for another resource',
};

export class TokenError extends Error {
  constructor(readonly reason: TokenFailure) {
    super(FAILURE_MESSAGES[reason]);
    this.name = 'TokenError';
  }
}

export interface SignOptions {
  purpose: string;
  ttlSeconds: number;
  bound?: Record<string, string>;
  /** Milliseconds since the epoch; defaults to the clock. */
  now?: number;
}

export interface VerifyOptions {
  purpose: string;
  /** Every field given here must be bound in the token with exactly this value. */
  bound?: Record<string, string>;
  now?: number;
}

export class TokenSigner {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length < 32) throw new Error('a token-signing key must be at least 32 bytes');
    this.#key = Buffer.from(key);
  }

  sign(options: SignOptions): { token: string; claims: TokenClaims } {
    if (!Number.isFinite(options.ttlSeconds) || options.ttlSeconds <= 0) throw new Error('ttlSeconds must be positive');
    const now = options.now ?? Date.now();
    const claims: TokenClaims = {
      purpose: options.purpose,
      exp: Math.floor(now / 1000) + Math.ceil(options.ttlSeconds),
      jti: randomBytes(16).toString('base64url'),
      bound: { ...options.bound },
    };
    const signed = `${VERSION}.${Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url')}`;
    return { token: `${signed}.${this.#mac(signed).toString('base64url')}`, claims };
  }

  /** The token's claims, or a TokenError saying which check failed. */
  verify(token: string, options: VerifyOptions): TokenClaims {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) throw new TokenError('malformed');
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION || !isBase64Url(parts[1]) || !isBase64Url(parts[2])) {
      throw new TokenError('malformed');
    }
    const signature = Buffer.from(parts[2] as string, 'base64url');
    if (signature.length !== SIGNATURE_BYTES) throw new TokenError('malformed');
    if (!timingSafeEqual(signature, this.#mac(`${parts[0]}.${parts[1]}`))) throw new TokenError('bad_signature');

    const claims = parseClaims(Buffer.from(parts[1] as string, 'base64url').toString('utf8'));
    if (claims.purpose !== options.purpose) throw new TokenError('wrong_purpose');
    const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
    if (nowSeconds >= claims.exp) throw new TokenError('expired');
    for (const [field, value] of Object.entries(options.bound ?? {})) {
      if (claims.bound[field] !== value) throw new TokenError('wrong_binding');
    }
    return claims;
  }

  #mac(data: string): Buffer {
    return createHmac('sha256', this.#key).update(data, 'utf8').digest();
  }
}

function isBase64Url(part: string | undefined): part is string {
  return part !== undefined && part.length > 0 && /^[A-Za-z0-9_-]+$/.test(part);
}

/** Only reached for tokens we signed, so a failure here means a bug or a changed format. */
function parseClaims(json: string): TokenClaims {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new TokenError('malformed');
  }
  if (typeof value !== 'object' || value === null) throw new TokenError('malformed');
  const { purpose, exp, jti, bound } = value as Record<string, unknown>;
  if (typeof purpose !== 'string' || typeof exp !== 'number' || !Number.isInteger(exp) || typeof jti !== 'string') {
    throw new TokenError('malformed');
  }
  if (typeof bound !== 'object' || bound === null || Array.isArray(bound)) throw new TokenError('malformed');
  const fields: Record<string, string> = {};
  for (const [key, field] of Object.entries(bound)) {
    if (typeof field !== 'string') throw new TokenError('malformed');
    fields[key] = field;
  }
  return { purpose, exp, jti, bound: fields };
}
