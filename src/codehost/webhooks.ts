import { createHmac, timingSafeEqual } from 'node:crypto';
import secureJson from 'secure-json-parse';
import { type Static, Type } from 'typebox';
// typebox/schema, not typebox/value: the same Check and Errors (typebox/value's call these), without the
// value toolkit's 300 modules that every start of the server would load.
import { Check, Errors } from 'typebox/schema';
import { sameRepository } from './url.js';

export type WebhookFailure = 'signature-missing' | 'signature-invalid' | 'payload-invalid';

/** A delivery to refuse: 401 for the signature failures, 400 for a payload that is not a push. */
export class WebhookError extends Error {
  override name = 'WebhookError';

  constructor(
    readonly failure: WebhookFailure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Checks GitHub's `X-Hub-Signature-256` (`sha256=<hex HMAC-SHA256 of the raw body>`) in
 * constant time. `rawBody` must be the bytes as received, before any JSON parsing.
 */
export function verifyGitHubSignature(secret: string, rawBody: Buffer | string, signatureHeader: string | null | undefined): boolean {
  if (secret === '') throw new Error('a webhook secret is required to verify deliveries');
  const hex = SIGNATURE.exec(signatureHeader?.trim() ?? '')?.[1];
  if (!hex) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;

/**
 * Refuses a delivery without a well-formed `X-Hub-Signature-256` header from its headers
 * alone, so that its body need not be read (it can only be checked once read whole).
 */
export function requireGitHubSignatureHeader(headers: Record<string, HeaderValue>): void {
  const signature = headerOf(headers, 'x-hub-signature-256');
  if (!signature) throw new WebhookError('signature-missing', 'the delivery has no X-Hub-Signature-256 header');
  if (!SIGNATURE.test(signature.trim())) throw new WebhookError('signature-invalid', 'the X-Hub-Signature-256 header is not sha256=<64 hex digits>');
}

function headerOf(headers: Record<string, HeaderValue>, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

const PushPayload = Type.Object({
  ref: Type.String(),
  before: Type.String(),
  after: Type.String(),
  created: Type.Optional(Type.Boolean()),
  deleted: Type.Optional(Type.Boolean()),
  forced: Type.Optional(Type.Boolean()),
  repository: Type.Object({
    id: Type.Integer(),
    full_name: Type.String(),
    clone_url: Type.String(),
    html_url: Type.String(),
    ssh_url: Type.Optional(Type.String()),
    default_branch: Type.Optional(Type.String()),
    // A Unix time in push events (an ISO string in other events' repository objects).
    pushed_at: Type.Optional(Type.Union([Type.Number(), Type.String(), Type.Null()])),
  }),
  installation: Type.Optional(Type.Object({ id: Type.Integer() })),
});
type PushPayload = Static<typeof PushPayload>;

export interface GitHubPush {
  deliveryId: string;
  /** The GitHub App installation the delivery is for (finds the integration); null for repository webhooks. */
  installationId: number | null;
  repository: { id: number; fullName: string; cloneUrl: string; htmlUrl: string; sshUrl: string | null };
  ref: string;
  /** `main` for `refs/heads/main`; null when a tag or another ref was pushed. */
  branch: string | null;
  /** `v1.0` for `refs/tags/v1.0`, else null. */
  tag: string | null;
  before: string;
  /** The new commit (all zeros when the ref was deleted). */
  after: string;
  created: boolean;
  deleted: boolean;
  forced: boolean;
  /** When the push happened, as GitHub wrote it (`repository.pushed_at`); null if absent. */
  pushedAt: string | null;
}

/** Reads a `push` event's payload (already parsed from JSON). */
export function parseGitHubPush(deliveryId: string, payload: unknown): GitHubPush {
  if (!Check(PushPayload, payload)) {
    const first = Errors(PushPayload, payload)[1][0];
    const where = first ? `${first.instancePath || '/'}: ${first.message}` : 'unexpected shape';
    throw new WebhookError('payload-invalid', `not a GitHub push payload (${where})`);
  }
  const push: PushPayload = payload;
  const branch = push.ref.startsWith('refs/heads/') ? push.ref.slice('refs/heads/'.length) : null;
  const tag = push.ref.startsWith('refs/tags/') ? push.ref.slice('refs/tags/'.length) : null;
  return {
    deliveryId,
    installationId: push.installation?.id ?? null,
    repository: {
      id: push.repository.id,
      fullName: push.repository.full_name,
      cloneUrl: push.repository.clone_url,
      htmlUrl: push.repository.html_url,
      sshUrl: push.repository.ssh_url ?? null,
    },
    ref: push.ref,
    branch,
    tag,
    before: push.before,
    after: push.after,
    created: push.created ?? /^0+$/.test(push.before),
    deleted: push.deleted ?? /^0+$/.test(push.after),
    forced: push.forced ?? false,
    pushedAt: push.repository.pushed_at == null ? null : String(push.repository.pushed_at),
  };
}

const PullRequestPayload = Type.Object({
  action: Type.String(),
  number: Type.Integer({ minimum: 1 }),
  pull_request: Type.Object({
    head: Type.Object({
      sha: Type.String(),
      ref: Type.String(),
      // Null when the fork was deleted.
      repo: Type.Union([Type.Object({ id: Type.Integer(), full_name: Type.String() }), Type.Null()]),
    }),
    labels: Type.Optional(Type.Array(Type.Object({ name: Type.String() }))),
    merged: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  }),
  repository: PushPayload.properties.repository,
  installation: Type.Optional(Type.Object({ id: Type.Integer() })),
});

export interface GitHubPullRequest {
  deliveryId: string;
  action: string;
  number: number;
  headSha: string;
  headRef: string;
  /** The head is in another repository than the base (or in one since deleted). */
  fork: boolean;
  labels: string[];
  repository: GitHubPush['repository'];
}

/** Reads a `pull_request` event's payload (already parsed from JSON). */
export function parseGitHubPullRequest(deliveryId: string, payload: unknown): GitHubPullRequest {
  if (!Check(PullRequestPayload, payload)) {
    const first = Errors(PullRequestPayload, payload)[1][0];
    const where = first ? `${first.instancePath || '/'}: ${first.message}` : 'unexpected shape';
    throw new WebhookError('payload-invalid', `not a GitHub pull_request payload (${where})`);
  }
  const { action, number, pull_request: pr, repository } = payload as Static<typeof PullRequestPayload>;
  return {
    deliveryId,
    action,
    number,
    headSha: pr.head.sha,
    headRef: pr.head.ref,
    fork: pr.head.repo === null || pr.head.repo.id !== repository.id,
    labels: (pr.labels ?? []).map((label) => label.name),
    repository: {
      id: repository.id,
      fullName: repository.full_name,
      cloneUrl: repository.clone_url,
      htmlUrl: repository.html_url,
      sshUrl: repository.ssh_url ?? null,
    },
  };
}

export type GitHubDelivery =
  | { event: 'push'; deliveryId: string; push: GitHubPush }
  | { event: 'pull_request'; deliveryId: string; pullRequest: GitHubPullRequest }
  /** Sent when a webhook is created; answer 2xx and do nothing. */
  | { event: 'ping'; deliveryId: string }
  /** Any other event; answer 2xx and do nothing. */
  | { event: 'other'; deliveryId: string; name: string };

export type HeaderValue = string | string[] | undefined;

/**
 * One webhook delivery, start to end: the signature is checked over the raw body before
 * anything is parsed, then the body is read as JSON or as the form-encoded `payload` field
 * (GitHub's two content types) and a push event is parsed. Throws WebhookError.
 */
export function readGitHubDelivery(input: { headers: Record<string, HeaderValue>; rawBody: Buffer | string; secret: string }): GitHubDelivery {
  const header = (name: string) => headerOf(input.headers, name);
  const signature = header('x-hub-signature-256');
  if (!signature) throw new WebhookError('signature-missing', 'the delivery has no X-Hub-Signature-256 header');
  if (!verifyGitHubSignature(input.secret, input.rawBody, signature)) {
    throw new WebhookError('signature-invalid', 'the X-Hub-Signature-256 signature does not match the webhook secret');
  }
  const deliveryId = header('x-github-delivery') ?? '';
  const event = header('x-github-event') ?? '';
  if (event === 'ping') return { event: 'ping', deliveryId };
  if (event === 'pull_request') {
    return { event, deliveryId, pullRequest: parseGitHubPullRequest(deliveryId, decodeBody(input.rawBody, header('content-type'))) };
  }
  if (event !== 'push') return { event: 'other', deliveryId, name: event };
  return { event: 'push', deliveryId, push: parseGitHubPush(deliveryId, decodeBody(input.rawBody, header('content-type'))) };
}

function decodeBody(rawBody: Buffer | string, contentType: string | undefined): unknown {
  let text = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  if (contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const field = new URLSearchParams(text).get('payload');
    if (field === null) throw new WebhookError('payload-invalid', 'the form-encoded delivery has no payload field');
    text = field;
  }
  try {
    return secureJson.parse(text, { protoAction: 'remove', constructorAction: 'remove' });
  } catch {
    throw new WebhookError('payload-invalid', 'the delivery body is not valid JSON');
  }
}

/** Whether a push (or pull request) is for the repository a deployment stores as `repo_url` (any URL form; see sameRepository). */
export function pushMatchesRepository(push: Pick<GitHubPush, 'repository'>, repoUrl: string): boolean {
  const { cloneUrl, htmlUrl, sshUrl } = push.repository;
  return [cloneUrl, htmlUrl, sshUrl].some((url) => url !== null && sameRepository(url, repoUrl));
}
