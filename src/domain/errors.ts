/**
 * The closed set of failures Berth reports on purpose, each with a stable code. The code
 * goes to clients beside FastAPI's `detail` (whose wording real clients parse, so it stays
 * as it is); SDKs and the dashboard branch on the code. `contract/errors.ts` maps each code
 * to its HTTP status, in one table; anything thrown that is not a DomainError is a bug and
 * answers 500 without details.
 */
export const ERROR_CODES = [
  // 400: the request asks for something that cannot be done
  'bad_request',
  'source_config_invalid',
  'listener_required',
  'field_immutable',
  'secrets_invalid',
  'previews_invalid',
  'revision_in_progress',
  'revision_not_in_progress',
  'integration_settings_invalid',
  'upload_not_available',
  'push_token_not_available',
  'registry_not_configured',
  'tarball_unknown',
  'upload_invalid',
  'webhook_not_accepted',
  'webhook_payload_invalid',
  'malformed_request',
  'listener_protocol_unsupported',
  // 401
  'api_key_missing',
  'api_key_invalid',
  'session_invalid',
  'webhook_signature_invalid',
  // 403
  'admin_key_required',
  'role_forbids',
  'workspace_required',
  'workspace_forbidden',
  'upload_token_invalid',
  'build_archive_url_invalid',
  'listener_key_forbidden',
  'listener_key_required',
  'image_not_in_workspace',
  'csrf_token_invalid',
  // 404
  'route_not_found',
  'deployment_not_found',
  'revision_not_found',
  'listener_not_found',
  'integration_not_found',
  'provider_not_found',
  'workspace_not_found',
  'api_key_not_found',
  'session_not_found',
  'webhook_subscription_not_found',
  'webhook_delivery_not_found',
  'build_job_not_found',
  // 408, 409, 410, 412, 413, 422, 429, 431
  'request_timeout',
  'idempotency_key_in_progress',
  'deployment_name_taken',
  'deployment_deleting',
  'listener_exists',
  'listener_in_use',
  'listener_namespace_in_use',
  'integration_in_use',
  'provider_exists',
  'workspace_name_taken',
  'api_key_self_revoke',
  'build_lease_lost',
  'database_limit_reached',
  'upload_url_gone',
  'resource_changed',
  'body_too_large',
  'upload_quota_exceeded',
  'unsupported_media_type',
  'validation_error',
  'idempotency_key_reused',
  'rate_limited',
  'headers_too_large',
  // 5xx
  'internal_error',
  'codehost_failed',
  'secrets_unreadable',
  'database_unavailable',
  'webhooks_busy',
  'codehost_timeout',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  /** pydantic's error context: the limit that was broken, for instance. */
  ctx?: Record<string, unknown>;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly issues: FieldIssue[] = [],
    /** When the same request may succeed again (rate limits): sent as `Retry-After`. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const fail = (code: ErrorCode, message: string) => new DomainError(code, message);
/** A field-level rule that the route schema cannot express; answers 422 like schema errors. */
export const invalidField = (issue: FieldIssue) => new DomainError('validation_error', issue.msg, [issue]);

export const rateLimited = (limit: string, retryAfterSeconds: number) =>
  new DomainError('rate_limited', `Rate limit exceeded: ${limit}. Retry in ${retryAfterSeconds} s.`, [], retryAfterSeconds);

export const deploymentNotFound = (id: string) => fail('deployment_not_found', `Deployment ID ${id} not found.`);
export const revisionNotFound = (id: string) => fail('revision_not_found', `Revision ID ${id} not found.`);
export const subscriptionNotFound = (id: string) => fail('webhook_subscription_not_found', `Webhook subscription ID ${id} not found.`);
export const deliveryNotFound = (id: string) => fail('webhook_delivery_not_found', `Webhook delivery ID ${id} not found.`);
export const listenerNotFound = (id: string) => fail('listener_not_found', `Listener ID ${id} not found.`);
/** A write to a deployment whose delete is under way: PATCH, a new revision and a redeploy answer alike. */
export const beingDeleted = (id: string) => fail('deployment_deleting', `Deployment ID ${id} is being deleted and cannot be changed.`);
/** Every "Source configuration error: …" (real clients show it as it is). */
export const sourceConfigError = (message: string) => fail('source_config_invalid', `Source configuration error: ${message}`);
