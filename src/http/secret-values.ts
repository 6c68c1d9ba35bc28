import type { FastifyInstance } from 'fastify';

/**
 * Answers to a dashboard session never carry a deployment secret's value: a browser page is
 * the one client that does not need them (it merges through PATCH …/secrets), and what never
 * reaches it cannot leak from its memory, devtools or an injected script. API keys keep the
 * values, as the spec and real clients require. Done on the serialized body so every answer
 * shape is covered (one deployment, pages, replays of kept idempotent answers); installed
 * before idempotency so an answer kept for a session is kept without values too.
 */
export function installSecretRedaction(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.session || typeof payload !== 'string' || !payload.includes('"secrets"')) return payload;
    if (!String(reply.getHeader('content-type') ?? '').includes('json')) return payload;
    let body: unknown;
    try {
      body = JSON.parse(payload);
    } catch {
      return payload;
    }
    return redact(body) ? JSON.stringify(body) : payload;
  });
}

/** Nulls `value` of every `{name, value}` in a `secrets` array anywhere in the body; says whether it changed any. */
function redact(node: unknown): boolean {
  if (Array.isArray(node)) return node.map(redact).some(Boolean);
  if (node === null || typeof node !== 'object') return false;
  let changed = false;
  for (const [field, child] of Object.entries(node as Record<string, unknown>)) {
    if (field === 'secrets' && Array.isArray(child)) {
      for (const secret of child) {
        if (secret && typeof secret === 'object' && 'value' in secret && (secret as { value: unknown }).value !== null) {
          (secret as { value: unknown }).value = null;
          changed = true;
        }
      }
    } else if (redact(child)) changed = true;
  }
  return changed;
}
