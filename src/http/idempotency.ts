import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IdempotencyHeaders } from '../contract/conditional.js';
import { withErrorCodes } from '../contract/errors.js';
import { DomainError, fail } from '../domain/errors.js';
import { isKeptAnswer, requestFingerprint } from '../domain/idempotency.js';
import type { IdempotencyService } from '../services/idempotency.js';
import { principalOf } from './auth.js';
import { SELF_HOSTED_PREFIX } from './prefix.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** POSTs that create or start something: they honour `Idempotency-Key`. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /** The idempotency key this request holds, until its answer is kept or it lets go. */
    idempotencyClaim?: { id: string; settled: boolean };
  }
}

/** Sent with a replayed answer, as payment APIs do. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/**
 * `Idempotency-Key` on the routes of the plugin it is installed in that say `idempotent`.
 * Runs after authentication and validation (a request that fails them keeps nothing, as at
 * payment APIs) and before the handler. The answer is kept in `onSend`, before it leaves,
 * so a retry sent the moment the first answer arrives replays it. What cannot be made
 * exact here: if the process dies after the handler's transaction committed and before the
 * answer is kept, a retry after the lock runs the request again.
 */
export function installIdempotency(app: FastifyInstance, idempotency: IdempotencyService): void {
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent || !route.schema) return;
    const headers = route.schema.headers as { properties?: Record<string, unknown> } | undefined;
    route.schema = {
      ...route.schema,
      headers: { ...IdempotencyHeaders, properties: { ...headers?.properties, ...IdempotencyHeaders.properties } },
      response: withErrorCodes(route.schema.response as never, ['idempotency_key_reused', 'idempotency_key_in_progress']),
    };
  });

  app.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.idempotent) return;
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string') return;
    const principal = principalOf(request);
    const route = request.routeOptions.url ?? request.url;
    const fingerprint = requestFingerprint({
      method: request.method,
      route: route.startsWith(SELF_HOSTED_PREFIX) ? route.slice(SELF_HOSTED_PREFIX.length) : route,
      params: request.params ?? {},
      body: request.body ?? null,
      caller: principal.keyId,
    });
    const claim = await idempotency.claim(request.workspaceScope?.workspaceId ?? principal.organizationId, key, fingerprint);
    switch (claim.kind) {
      case 'run':
        request.idempotencyClaim = { id: claim.id, settled: false };
        return;
      case 'replay':
        reply.code(claim.answer.status).header(REPLAYED_HEADER, 'true');
        if (claim.answer.contentType) reply.type(claim.answer.contentType);
        return reply.send(claim.answer.body === '' ? undefined : claim.answer.body);
      case 'reused':
        throw fail(
          'idempotency_key_reused',
          'This Idempotency-Key was already used for another request (another body, operation or API key); use a new key for a new request.',
        );
      case 'in_progress':
        throw new DomainError('idempotency_key_in_progress', 'A request with this Idempotency-Key is still in progress; retry once it has answered.', [], 1);
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotencyClaim;
    if (!claim || claim.settled) return payload;
    claim.settled = true;
    await settle(request, reply, claim.id, payload, idempotency);
    return payload;
  });

  // An answer that never reached onSend (a failure while serializing) keeps the key from nobody.
  app.addHook('onResponse', async (request) => {
    const claim = request.idempotencyClaim;
    if (!claim || claim.settled) return;
    claim.settled = true;
    await idempotency.release(claim.id).catch((error: unknown) => request.log.warn({ err: error }, 'could not let go of an idempotency key'));
  });
}

async function settle(request: FastifyRequest, reply: FastifyReply, id: string, payload: unknown, idempotency: IdempotencyService): Promise<void> {
  const body = typeof payload === 'string' ? payload : payload == null ? '' : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
  try {
    if (body === undefined || !isKeptAnswer(reply.statusCode)) {
      await idempotency.release(id);
      return;
    }
    const contentType = reply.getHeader('content-type');
    await idempotency.answer(id, { status: reply.statusCode, contentType: typeof contentType === 'string' ? contentType : null, body });
  } catch (error) {
    // The client still gets the real answer; a retry then waits for the lock and runs again.
    request.log.warn({ err: error }, 'could not keep the answer of an idempotency key');
  }
}
