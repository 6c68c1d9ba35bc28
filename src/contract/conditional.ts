import { Type } from 'typebox';

/** The idempotency key header of POSTs that create or start something (http/idempotency.ts). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7E]+$',
      description:
        'Makes retries safe: the same key with the same request within BERTH_IDEMPOTENCY_KEY_HOURS (24 h by default) answers ' +
        'what the first request answered, with `Idempotent-Replayed: true`; the same key with another request is a 422 ' +
        '(`idempotency_key_reused`), and while the first request still runs a 409 (`idempotency_key_in_progress`). Keys ' +
        'belong to the workspace (or, on organization routes, the organization) and to the API key that sent them. At ' +
        'most 255 printable ASCII characters; a UUID is a good key.',
    }),
  ),
});

export const NotModified = Type.Null({ description: 'Not modified: the `ETag` in `If-None-Match` is still current.' });

/** Conditional reads (`If-None-Match`: 304 when unchanged). */
export const ConditionalReadHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ maxLength: 1024, description: 'An `ETag` from an earlier answer: 304 Not Modified while it still matches.' })),
});

/** Conditional writes (`If-Match`: 412 `resource_changed` when the resource changed since it was read). */
export const ConditionalWriteHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      maxLength: 1024,
      description:
        'The `ETag` of the resource as it was read: when the resource has changed since, nothing is written and the answer is 412 (`resource_changed`).',
    }),
  ),
});
