import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';

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
 * Per-key rate limiting, counted in this process (each replica counts its own). Answers
 * 429 with Retry-After. Runs before authentication, so guessing keys is limited per client
 * address too.
 */
export async function installRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  if (perMinute <= 0) return;
  await app.register(rateLimit, {
    max: perMinute,
    timeWindow: 60_000,
    allowList: (request) => request.url === '/ok',
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (_request, context) =>
      Object.assign(new Error(`Rate limit exceeded: at most ${context.max} requests per minute per API key. Retry in ${context.after}.`), {
        statusCode: 429,
      }),
  });
}

/** A digest, so raw keys are not kept in memory as map keys. */
function rateLimitKey(request: FastifyRequest): string {
  const header = request.headers['x-api-key'];
  const key = (Array.isArray(header) ? header[0] : header) ?? /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1];
  return key ? `key:${createHash('sha256').update(key).digest('base64url')}` : `ip:${request.ip}`;
}
