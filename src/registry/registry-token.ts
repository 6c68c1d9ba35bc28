import { randomUUID } from 'node:crypto';
import type { AccessEntry } from './access.js';
import type { RegistrySigningKey } from './signing-key.js';

export interface RegistryTokenClaims {
  /** Must equal the registry's `auth.token.issuer`. */
  issuer: string;
  /** Must equal the registry's `auth.token.service`; becomes the token's `aud`. */
  service: string;
  subject: string;
  access: AccessEntry[];
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * Signs a bearer token in the form distribution 2.8's token access controller verifies:
 * `aud` a single string (2.8 cannot decode a list), `iss`/`aud` compared exactly, `exp`/`nbf`
 * checked with 60 s of leeway, and the signing key found through the `x5c` header, whose
 * certificate must chain to `rootcertbundle`. `x5c` rather than a libtrust `kid` because
 * distribution 3 also accepts it unchanged.
 */
export async function signRegistryToken(key: RegistrySigningKey, claims: RegistryTokenClaims): Promise<string> {
  const issuedAt = Math.floor(claims.issuedAt.getTime() / 1000);
  const { SignJWT } = await import('jose');
  return new SignJWT({ access: claims.access })
    .setProtectedHeader({ alg: key.algorithm, typ: 'JWT', x5c: key.x5c })
    .setIssuer(claims.issuer)
    .setSubject(claims.subject)
    .setAudience(claims.service)
    .setIssuedAt(issuedAt)
    .setNotBefore(issuedAt)
    .setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000))
    .setJti(randomUUID())
    .sign(key.privateKey);
}
