import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { type DomainError, rateLimited } from '../domain/errors.js';
import { hasGeneratedShape } from '../security/api-keys.js';
import { presentedKey } from './auth.js';

/**
 * Per-key rate limiting, counted in this process (each replica counts its own), answered
 * with 429 and Retry-After before authentication. The key is the one authentication will
 * use; requests without one count per client address.
 */
export async function installRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  if (perMinute <= 0) return;
  await app.register(rateLimit, { global: false, timeWindow: WINDOW_MS });
  const perKey = app.createRateLimit({ max: perMinute, keyGenerator: rateLimitKey, allowList: (request) => HEALTH_CHECKS.has(request.url) });
  app.addHook('onRequest', async (request) => {
    const result = await perKey(request);
    if (result.isAllowed || !result.isExceeded) return;
    throw rateLimited(`at most ${result.max} requests per minute`, result.ttlInSeconds);
  });
}

const WINDOW_MS = 60_000;

/** The health check is never limited, at the root or under the self-hosted prefix. */
const HEALTH_CHECKS = new Set(['/ok', '/api-host/ok']);

/** A digest, so raw keys are not kept in memory as map keys. */
function rateLimitKey(request: FastifyRequest): string {
  const key = presentedKey(request);
  return key ? `key:${digestOf(key)}` : `ip:${request.ip}`;
}

/** How long a key that authenticated stays known here, so its address's exhausted budget does not stop it. */
const KNOWN_KEY_TTL_MS = 60 * 60 * 1000;

/**
 * Guessing keys: a new key per request would get a fresh per-key budget each time, so
 * failed authentications are counted per client address as well. What the budget
 * protects is keys that could be guessed, and it throttles the failing keys, not the
 * address: past the budget, a wrong key gets 429 instead of 401, while a valid key still
 * authenticates, so clients sharing an address with a guesser (behind one NAT or proxy)
 * keep working, with keys never used from there and after a restart alike.
 *
 * Which keys are looked up past the budget: keys of the shape Berth generates (every API
 * and listener key, and the bootstrap key unless an operator chose it) carry 256 random
 * bits, so answering whether one is valid helps no guesser, and a lookup is one digest
 * and one indexed read; keys that authenticated on this server within the last hour. Any
 * other key (a guessable one, such as a weak configured bootstrap key) is refused before
 * it is looked up until the minute is over, so guessing those stays as slow as the
 * budget and costs the database nothing.
 */
export class AuthFailureGuard {
  readonly #failures = new Map<string, { count: number; resetAt: number }>();
  /** Digests of keys that authenticated, never the keys themselves. */
  readonly #knownKeys = new LRUCache<string, true>({ max: 10_000, ttl: KNOWN_KEY_TTL_MS });

  constructor(private readonly perMinute: number) {}

  /** Throws 429 when the address is past its budget and the key is one a guesser could find. */
  admit(request: FastifyRequest, key: string | undefined): void {
    const entry = this.#current(request.ip);
    if (!entry || entry.count < this.perMinute) return;
    if (key !== undefined && (hasGeneratedShape(key) || this.#knownKeys.has(digestOf(key)))) return;
    throw this.#refusal(entry);
  }

  recordSuccess(key: string): void {
    this.#knownKeys.set(digestOf(key), true);
  }

  /** Counts a failed authentication; past the budget its answer is this 429 instead of 401. */
  recordFailure(request: FastifyRequest): DomainError | undefined {
    const entry = this.#current(request.ip) ?? { count: 0, resetAt: Date.now() + WINDOW_MS };
    const over = entry.count >= this.perMinute;
    entry.count += 1;
    this.#failures.delete(request.ip);
    this.#failures.set(request.ip, entry);
    // Bounded memory: the oldest addresses go first.
    if (this.#failures.size > 10_000) this.#failures.delete(this.#failures.keys().next().value as string);
    return over ? this.#refusal(entry) : undefined;
  }

  #refusal(entry: { resetAt: number }): DomainError {
    const seconds = Math.ceil((entry.resetAt - Date.now()) / 1000);
    return rateLimited(`at most ${this.perMinute} failed authentications per minute from one address`, seconds);
  }

  #current(address: string) {
    const entry = this.#failures.get(address);
    if (entry && entry.resetAt <= Date.now()) {
      this.#failures.delete(address);
      return undefined;
    }
    return entry;
  }
}

function digestOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}
