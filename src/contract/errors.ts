import { type TSchema, Type } from 'typebox';
import { ERROR_CODES, type ErrorCode } from '../domain/errors.js';
import { AnyObject, StringEnum } from './common.js';

/** Every error code's HTTP status, in one table: the same condition answers alike everywhere. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  bad_request: 400,
  malformed_request: 400,
  source_config_invalid: 400,
  listener_required: 400,
  field_immutable: 400,
  previews_invalid: 400,
  secrets_invalid: 400,
  revision_in_progress: 400,
  revision_not_in_progress: 400,
  integration_settings_invalid: 400,
  upload_not_available: 400,
  push_token_not_available: 400,
  registry_not_configured: 400,
  tarball_unknown: 400,
  upload_invalid: 400,
  webhook_not_accepted: 400,
  webhook_payload_invalid: 400,
  listener_protocol_unsupported: 400,
  api_key_missing: 401,
  api_key_invalid: 401,
  session_invalid: 401,
  webhook_signature_invalid: 401,
  admin_key_required: 403,
  role_forbids: 403,
  workspace_required: 403,
  workspace_forbidden: 403,
  upload_token_invalid: 403,
  build_archive_url_invalid: 403,
  listener_key_forbidden: 403,
  listener_key_required: 403,
  image_not_in_workspace: 403,
  csrf_token_invalid: 403,
  route_not_found: 404,
  deployment_not_found: 404,
  revision_not_found: 404,
  listener_not_found: 404,
  webhook_subscription_not_found: 404,
  webhook_delivery_not_found: 404,
  integration_not_found: 404,
  provider_not_found: 404,
  workspace_not_found: 404,
  api_key_not_found: 404,
  session_not_found: 404,
  build_job_not_found: 404,
  request_timeout: 408,
  deployment_name_taken: 409,
  idempotency_key_in_progress: 409,
  deployment_deleting: 409,
  listener_exists: 409,
  listener_in_use: 409,
  listener_namespace_in_use: 409,
  integration_in_use: 409,
  provider_exists: 409,
  workspace_name_taken: 409,
  api_key_self_revoke: 409,
  build_lease_lost: 409,
  database_limit_reached: 409,
  upload_url_gone: 410,
  resource_changed: 412,
  body_too_large: 413,
  upload_quota_exceeded: 413,
  unsupported_media_type: 415,
  validation_error: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  codehost_failed: 502,
  secrets_unreadable: 503,
  database_unavailable: 503,
  webhooks_busy: 503,
  codehost_timeout: 504,
};

export const ErrorBody = Type.Object(
  {
    detail: Type.String({ description: 'What went wrong, in words a person can act on.' }),
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: [...ERROR_CODES],
      title: 'ErrorCode',
      description: 'Stable machine-readable code; branch on this, not on `detail`.',
    }),
  },
  { title: 'Error', description: 'An error, in FastAPI form with a stable code beside it.' },
);

export const FieldIssue = Type.Object(
  {
    type: Type.String(),
    loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
    msg: Type.String(),
    input: Type.Optional(Type.Unknown()),
    ctx: Type.Optional(AnyObject()),
  },
  { title: 'ValidationIssue' },
);

export const ValidationErrorBody = Type.Object(
  { detail: Type.Array(FieldIssue), code: Type.Literal('validation_error') },
  { title: 'HTTPValidationError', description: 'Validation error, in FastAPI form: the first few issues, each with where it is.' },
);

/**
 * The documented error answers of a route: one per status its codes map to, whose `code`
 * is one of exactly those codes. Every route with a body or parameters can also answer 422
 * (validation_error), and every route 429 (rate_limited) and 503 (database_unavailable:
 * the database could not be reached, retry after the `Retry-After` seconds); authentication
 * adds its own codes (see http/auth.ts).
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set<ErrorCode>(['validation_error', 'rate_limited', 'database_unavailable', ...codes])) {
    const status = STATUS_BY_CODE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries([...byStatus].sort(([a], [b]) => a - b).map(([status, list]) => [status, errorSchema(status, list)]));
}

/** A route's documented error answers with more codes added (those its authentication can give). */
export function withErrorCodes(responses: Record<string, unknown> | undefined, codes: readonly ErrorCode[]): Record<string, unknown> {
  const listed = Object.entries(responses ?? {}).flatMap(([, schema]) => codesOf(schema));
  const errors = errorResponses(...listed, ...codes);
  const successes = Object.fromEntries(Object.entries(responses ?? {}).filter(([status]) => Number(status) < 400));
  return { ...successes, ...errors };
}

function errorSchema(status: number, codes: ErrorCode[]): TSchema {
  if (status === STATUS_BY_CODE.validation_error) {
    // Other 422 codes (a reused idempotency key) answer with a text `detail`, like every other error.
    const others = codes.filter((code) => code !== 'validation_error');
    return others.length === 0 ? ValidationErrorBody : Type.Union([ValidationErrorBody, plainErrorSchema(others)]);
  }
  return plainErrorSchema(codes);
}

function plainErrorSchema(codes: ErrorCode[]): TSchema {
  return Type.Object(
    { detail: ErrorBody.properties.detail, code: StringEnum(codes) },
    { description: codes.length === 1 ? `\`${codes[0]}\`` : `One of ${codes.map((code) => `\`${code}\``).join(', ')}` },
  );
}

function codesOf(schema: unknown): ErrorCode[] {
  const union = (schema as { anyOf?: unknown[] }).anyOf;
  if (union) return union.flatMap(codesOf);
  const properties = (schema as { properties?: { code?: { enum?: unknown[]; const?: unknown } } }).properties;
  const code = properties?.code;
  const values = code?.enum ?? (code?.const === undefined ? [] : [code.const]);
  return values.filter((value): value is ErrorCode => (ERROR_CODES as readonly unknown[]).includes(value));
}
