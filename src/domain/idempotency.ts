import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/** What makes two requests with one idempotency key the same request. */
export interface IdempotentRequest {
  method: string;
  /** The route's pattern (`/v2/deployments/:deployment_id/revisions`), the same with or without `/api-host`. */
  route: string;
  params: unknown;
  body: unknown;
  /**
   * The API key that sent it. A retry comes with the same credentials; binding the key to
   * them means that another member of the workspace who learns a key (they travel in
   * logs and proxies) cannot have a one-time secret of the first answer (a listener key,
   * an API key) replayed to them.
   */
  caller: string;
}

/** SHA-256 of the request in canonical JSON: key order and spacing of the body do not matter. */
export function requestFingerprint(request: IdempotentRequest): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

/** A stored answer, replayed as it was. */
export interface StoredAnswer {
  status: number;
  contentType: string | null;
  body: string;
}

/**
 * Answers that are not kept, so that a retry runs again: failures of Berth or of what it
 * called (5xx), and answers that say "not now" (timeouts, rate limits).
 */
export function isKeptAnswer(status: number): boolean {
  return status < 500 && status !== 408 && status !== 429;
}
