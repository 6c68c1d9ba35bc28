import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { presentedKey } from './auth.js';

export interface RequestLimits {
  /** Requests per minute per API key (per client address without a key); 0 turns limiting off. */
  rateLimitPerMinute: number;
  /** Largest accepted request body; larger bodies get 413. */
  bodyLimitBytes: number;
  /** Time a client has to send a whole request (headers and body); slower ones get 408. */
  requestTimeoutMs: number;
}

export const DEFAULT_LIMITS: RequestLimits = { rateLimitPerMinute: 6000, bodyLimitBytes: 1024 * 1024, requestTimeoutMs: 30_000 };

/**
 * Per-key rate limiting, counted in this process (each replica counts its own), answered
 * with 429 and Retry-After before authentication. The key is the one authentication will
 * use; requests without one count per client address.
 */
export async function installRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  if (perMinute <= 0) return;
  await app.register(rateLimit, { global: false, timeWindow: WINDOW_MS });
  const perKey = app.createRateLimit({ max: perMinute, keyGenerator: rateLimitKey, allowList: (request) => request.url === '/ok' });
  app.addHook('onRequest', async (request, reply) => {
    const result = await perKey(request);
    if (result.isAllowed || !result.isExceeded) return;
    reply.header('retry-after', String(result.ttlInSeconds));
    throw tooManyRequests(`at most ${result.max} requests per minute`, result.ttlInSeconds);
  });
}

const WINDOW_MS = 60_000;

function tooManyRequests(limit: string, retryAfterSeconds: number): Error {
  return Object.assign(new Error(`Rate limit exceeded: ${limit}. Retry in ${retryAfterSeconds} s.`), { statusCode: 429 });
}

/** A digest, so raw keys are not kept in memory as map keys. */
function rateLimitKey(request: FastifyRequest): string {
  const key = presentedKey(request);
  return key ? `key:${createHash('sha256').update(key).digest('base64url')}` : `ip:${request.ip}`;
}

/**
 * Guessing keys: a new key per request would get a fresh per-key budget each time, so
 * failed authentications are counted per client address as well. An address past the
 * budget is refused (429) for the rest of the window, valid key or not, so answers cannot
 * tell a guessed key from a wrong one.
 */
export class AuthFailureGuard {
  readonly #failures = new Map<string, { count: number; resetAt: number }>();

  constructor(private readonly perMinute: number) {}

  check(request: FastifyRequest): void {
    const entry = this.#current(request.ip);
    if (entry && entry.count >= this.perMinute) {
      const seconds = Math.ceil((entry.resetAt - Date.now()) / 1000);
      throw Object.assign(tooManyRequests(`at most ${this.perMinute} failed authentications per minute from one address`, seconds), {
        retryAfter: seconds,
      });
    }
  }

  recordFailure(request: FastifyRequest): void {
    const entry = this.#current(request.ip) ?? { count: 0, resetAt: Date.now() + WINDOW_MS };
    entry.count += 1;
    this.#failures.delete(request.ip);
    this.#failures.set(request.ip, entry);
    // Bounded memory: the oldest addresses go first.
    if (this.#failures.size > 10_000) this.#failures.delete(this.#failures.keys().next().value as string);
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
