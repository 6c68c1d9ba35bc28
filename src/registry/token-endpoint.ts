import { grantAccess, parseScopes, type RegistryAccess, type RequestedScope, ScopeError } from './access.js';
import { signRegistryToken } from './registry-token.js';
import type { RegistrySigningKey } from './signing-key.js';

/** Resolves a credential to what it may access, or null when it is unknown, tampered with or expired. */
export type VerifyRegistryCredential = (credential: string) => Promise<RegistryAccess | null>;

export interface TokenEndpointOptions {
  signingKey: RegistrySigningKey;
  /** The registry's `auth.token.issuer`. */
  issuer: string;
  /** The registry's `auth.token.service`. */
  service: string;
  verifyCredential: VerifyRegistryCredential;
  /** Lifetime of each registry token (clients fetch a new one when it runs out). Default 300 s. */
  tokenTtlSeconds?: number;
  now?: () => Date;
}

/** The parts of `GET <realm>?service=…&scope=…` the endpoint reads; the route passes them as received. */
export interface TokenRequest {
  authorization?: string;
  service?: string;
  /** Every `scope` query value (clients may repeat it, or put several scopes in one separated by spaces). */
  scope?: string | readonly string[];
}

export interface TokenGrantBody {
  token: string;
  /** The same token: the OAuth 2 name, which some clients read instead. */
  access_token: string;
  expires_in: number;
  issued_at: string;
}

/** The registry API's error shape, so clients print the message. */
export interface RegistryErrorBody {
  errors: { code: 'UNAUTHORIZED' | 'UNSUPPORTED'; message: string; detail: null }[];
}

export type TokenEndpointResponse =
  { status: 200; headers: Record<string, string>; body: TokenGrantBody } | { status: 400 | 401; headers: Record<string, string>; body: RegistryErrorBody };

export const DEFAULT_REGISTRY_TOKEN_TTL_SECONDS = 300;
/** Suggested `auth.token.issuer` and `auth.token.service`; docs/registry.md uses them. */
export const DEFAULT_TOKEN_ISSUER = 'berth';
export const DEFAULT_REGISTRY_SERVICE = 'berth-registry';

// Tokens and their refusals must not be cached by anything between the client and Berth.
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * The registry's token realm as a function of the request, free of any HTTP framework. A valid
 * credential always gets a token; the token carries the requested actions its credential allows
 * and nothing more (the login probe asks for no scope at all and gets an empty `access`). Only a
 * missing or invalid credential is refused. The credential is never logged or echoed.
 */
export function createTokenEndpoint(options: TokenEndpointOptions): (request: TokenRequest) => Promise<TokenEndpointResponse> {
  const ttlSeconds = options.tokenTtlSeconds ?? DEFAULT_REGISTRY_TOKEN_TTL_SECONDS;
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) throw new RangeError('tokenTtlSeconds must be a positive integer');
  const now = options.now ?? (() => new Date());

  return async (request) => {
    if (request.service !== undefined && request.service !== options.service) {
      return refusal(400, 'UNSUPPORTED', `this token service issues tokens for the registry service "${options.service}" only`);
    }
    let requested: RequestedScope[];
    try {
      requested = parseScopes(toList(request.scope));
    } catch (error) {
      if (error instanceof ScopeError) return refusal(400, 'UNSUPPORTED', error.message);
      throw error;
    }

    const credential = basicPassword(request.authorization);
    if (credential === null) {
      return refusal(401, 'UNAUTHORIZED', 'authentication required: log in with user oauth2accesstoken and a Berth registry token as the password');
    }
    const allowed = await options.verifyCredential(credential);
    const issuedAt = now();
    if (allowed === null || (allowed.expiresAt !== undefined && allowed.expiresAt <= issuedAt)) {
      return refusal(401, 'UNAUTHORIZED', 'the registry credential is invalid or has expired: request a new push token from Berth');
    }
    const access = grantAccess(requested, allowed.repositories);

    let expiresAt = new Date(issuedAt.getTime() + ttlSeconds * 1000);
    if (allowed.expiresAt !== undefined && allowed.expiresAt < expiresAt) expiresAt = allowed.expiresAt;
    const token = await signRegistryToken(options.signingKey, {
      issuer: options.issuer,
      service: options.service,
      subject: allowed.subject,
      access,
      issuedAt,
      expiresAt,
    });
    return {
      status: 200,
      headers: { 'Content-Type': 'application/json', ...NO_STORE },
      body: {
        token,
        access_token: token,
        expires_in: Math.max(1, Math.floor((expiresAt.getTime() - issuedAt.getTime()) / 1000)),
        issued_at: issuedAt.toISOString(),
      },
    };
  };

  function refusal(status: 400 | 401, code: 'UNAUTHORIZED' | 'UNSUPPORTED', message: string): TokenEndpointResponse {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', ...NO_STORE };
    if (status === 401) headers['WWW-Authenticate'] = `Basic realm=${JSON.stringify(options.service)}`;
    return { status, headers, body: { errors: [{ code, message, detail: null }] } };
  }
}

function toList(value: string | readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  return typeof value === 'string' ? [value] : value;
}

/**
 * The password of a Basic `Authorization` header. The user name is not checked: the LangGraph
 * CLI sends `oauth2accesstoken`, other clients may send anything, and the credential alone
 * says who is calling.
 */
export function basicPassword(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  // `docker login --password-stdin` users often pipe a trailing newline; no credential holds whitespace.
  const password = decoded.slice(colon + 1).trim();
  return password === '' ? null : password;
}
