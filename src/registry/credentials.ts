import { hkdfSync, randomUUID } from 'node:crypto';
import { isRegistryAction, isRepositoryGrantKey, type RegistryAccess, type RegistryAction, type RepositoryGrants } from './access.js';
import type { VerifyRegistryCredential } from './token-endpoint.js';

/**
 * Berth's own registry credentials: what `POST /v2/deployments/{id}/push-token` hands out and what
 * Berth's engine and builder log in with. Each is an HS256 JWT signed with a secret derived from
 * Berth's master key, naming the repositories and actions it covers and when it expires, so any
 * replica verifies it without a database. It cannot be revoked: keep it short-lived.
 */

export const DEFAULT_PUSH_CREDENTIAL_TTL_SECONDS = 3600;
export const DEFAULT_SERVICE_CREDENTIAL_TTL_SECONDS = 900;

// Distinguish these from every other JWT Berth or the registry handles: a registry token (ES256,
// other audience) sent back as a password fails here, and so would any future HS256 token.
const ISSUER = 'berth';
const AUDIENCE = 'berth-registry-token-endpoint';
const TYPE = 'berth-registry-credential+jwt';
const DERIVATION_INFO = 'berth registry credential v1';
const MIN_SECRET_BYTES = 32;

export type CredentialSecret = Uint8Array;

/**
 * The HMAC secret for registry credentials, derived (HKDF-SHA256) from Berth's master key, so the
 * key that encrypts secrets at rest is never used as an HMAC key itself and every replica sharing
 * the master key derives the same secret.
 */
export function deriveCredentialSecret(masterKey: Uint8Array): CredentialSecret {
  if (masterKey.length < MIN_SECRET_BYTES) throw new RangeError(`the master key must be at least ${MIN_SECRET_BYTES} bytes`);
  return new Uint8Array(hkdfSync('sha256', masterKey, new Uint8Array(0), DERIVATION_INFO, 32));
}

export interface CredentialRequest {
  /** Who the credential stands for, e.g. `deployment:<id>` or `berth-engine`; becomes the registry token's `sub`. */
  subject: string;
  repositories: RepositoryGrants;
  ttlSeconds?: number;
  now?: Date;
}

export interface IssuedCredential {
  credential: string;
  expiresAt: Date;
}

export async function mintRegistryCredential(secret: CredentialSecret, request: CredentialRequest): Promise<IssuedCredential> {
  checkSecret(secret);
  const ttlSeconds = request.ttlSeconds ?? DEFAULT_PUSH_CREDENTIAL_TTL_SECONDS;
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) throw new RangeError('ttlSeconds must be a positive integer');
  if (request.subject === '') throw new RangeError('a registry credential needs a subject');
  for (const [name, actions] of Object.entries(request.repositories)) {
    if (!isRepositoryGrantKey(name)) throw new RangeError(`"${name}" is not a repository name or a path/* pattern`);
    if (actions.some((action) => !isRegistryAction(action))) throw new RangeError(`unknown registry action for "${name}"`);
  }
  const issuedAt = Math.floor((request.now ?? new Date()).getTime() / 1000);
  const expiresAt = issuedAt + ttlSeconds;
  const { SignJWT } = await import('jose');
  const credential = await new SignJWT({ repositories: request.repositories })
    .setProtectedHeader({ alg: 'HS256', typ: TYPE })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(request.subject)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .setJti(randomUUID())
    .sign(secret);
  return { credential, expiresAt: new Date(expiresAt * 1000) };
}

/** What a credential grants, or null when it is malformed, tampered with, expired or not one of these. */
export async function verifyRegistryCredential(secret: CredentialSecret, credential: string, now: Date = new Date()): Promise<RegistryAccess | null> {
  checkSecret(secret);
  // Outside the try: a jose that fails to load is an error of Berth, not an invalid credential.
  const { jwtVerify } = await import('jose');
  try {
    const { payload } = await jwtVerify(credential, secret, {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
      typ: TYPE,
      currentDate: now,
      requiredClaims: ['sub', 'exp'],
      clockTolerance: 0,
    });
    const repositories = readGrants(payload.repositories);
    if (!repositories || !payload.sub || payload.exp === undefined) return null;
    return { subject: payload.sub, repositories, expiresAt: new Date(payload.exp * 1000) };
  } catch {
    // jose's errors say why (expired, bad signature, …) but the caller answers every case alike.
    return null;
  }
}

/** The callback the token endpoint takes, for credentials minted with `secret`. */
export function credentialVerifier(secret: CredentialSecret, now: () => Date = () => new Date()): VerifyRegistryCredential {
  checkSecret(secret);
  return (credential) => verifyRegistryCredential(secret, credential, now());
}

export interface RepositoryCredentialRequest {
  subject: string;
  /** A repository name, or `path/*` for every repository below `path`. */
  repository: string;
  ttlSeconds?: number;
  now?: Date;
}

/** Push (and the pull that pushing needs for its blob checks): the CLI's push token, Berth's builder. */
export function mintPushCredential(secret: CredentialSecret, request: RepositoryCredentialRequest): Promise<IssuedCredential> {
  return mintRegistryCredential(secret, grantOne(request, ['push', 'pull'], DEFAULT_PUSH_CREDENTIAL_TTL_SECONDS));
}

/** Pull only: Berth's engine fetching a revision's image. */
export function mintPullCredential(secret: CredentialSecret, request: RepositoryCredentialRequest): Promise<IssuedCredential> {
  return mintRegistryCredential(secret, grantOne(request, ['pull'], DEFAULT_SERVICE_CREDENTIAL_TTL_SECONDS));
}

function grantOne(request: RepositoryCredentialRequest, actions: RegistryAction[], defaultTtl: number): CredentialRequest {
  return {
    subject: request.subject,
    repositories: { [request.repository]: actions },
    ttlSeconds: request.ttlSeconds ?? defaultTtl,
    now: request.now,
  };
}

function readGrants(value: unknown): RepositoryGrants | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const grants: Record<string, RegistryAction[]> = {};
  for (const [name, actions] of Object.entries(value)) {
    if (!isRepositoryGrantKey(name) || !Array.isArray(actions)) return null;
    if (!actions.every((action) => typeof action === 'string' && isRegistryAction(action))) return null;
    grants[name] = actions as RegistryAction[];
  }
  return grants;
}

function checkSecret(secret: CredentialSecret): void {
  if (secret.length < MIN_SECRET_BYTES) throw new RangeError(`the registry credential secret must be at least ${MIN_SECRET_BYTES} bytes`);
}
