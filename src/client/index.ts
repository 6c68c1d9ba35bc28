/**
 * The typed Berth client: every operation of the server's OpenAPI document (types generated
 * into schema.ts by openapi-typescript, calls made by openapi-fetch), pagination, waiting for
 * a revision and following a deployment's event stream. docs/client.md shows it in use.
 */
import createClient, { type Client } from 'openapi-fetch';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';
export type Schemas = components['schemas'];
export type Deployment = Schemas['Deployment'];
export type Revision = Schemas['Revision'];
export type RevisionStatus = Revision['status'];

/** Statuses a revision never leaves. */
export const TERMINAL_STATUSES: readonly RevisionStatus[] = ['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED'];
export const isTerminal = (status: string): boolean => (TERMINAL_STATUSES as readonly string[]).includes(status);

/** A request Berth refused (`status` ≥ 400, with the server's `code` and `detail`), or one that did not reach it (`status` 0). */
export class BerthApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly operation: string,
    /** The server's `Retry-After`, when it sent one. */
    readonly retryAfterSeconds?: number,
    /** The answer's `X-Request-Id`, to quote when asking an operator what happened. */
    readonly requestId?: string,
  ) {
    super(`${operation}: ${status === 0 ? detail : `${status} ${code}: ${detail}`}`);
    this.name = 'BerthApiError';
  }
}

/** The `detail` of a FastAPI-shaped body: a string, or 422 issues as `loc: msg` lines. */
function detailOf(body: unknown, fallback: string): { code: string; detail: string } {
  const { detail, code } = (body ?? {}) as { detail?: unknown; code?: unknown };
  const text =
    typeof detail === 'string'
      ? detail
      : Array.isArray(detail)
        ? detail.map((issue: { loc?: unknown[]; msg?: string }) => `${(issue.loc ?? []).join('.')}: ${issue.msg ?? 'invalid'}`).join('; ')
        : fallback;
  return { code: typeof code === 'string' ? code : 'unknown', detail: text };
}

export interface BerthClientOptions {
  /** Where Berth answers, e.g. `http://127.0.0.1:8124` (a `/api-host` suffix works too). */
  baseUrl: string;
  /** The API key; leave it out in a browser signed in with a session cookie (`sessions.create`). */
  apiKey?: string;
  /** Workspace id for admin keys acting in another workspace (`X-Tenant-Id`). */
  tenantId?: string;
  /**
   * The session's CSRF token (`sessions.current()`), sent as `X-CSRF-Token`: writes made with
   * the session cookie need it. Without an API key the client sends the cookie
   * (`credentials: 'same-origin'`) on every request.
   */
  csrfToken?: string;
  fetch?: typeof fetch;
}

/** One event of a deployment's stream: a status change or a log line. */
export type DeploymentEvent =
  | { id: string; event: 'status'; data: { revision_id: string; status: RevisionStatus; message: string | null; at: string } }
  | { id: string; event: 'log'; data: { revision_id: string | null; type: string; level: string; message: string; timestamp: number } }
  | { id: string; event: 'push_ignored_pinned'; data: { revision_id: string | null; commit: string; message: string; at: string } };

/** One event of the workspace's stream: a deployment's event, with the deployment in `data`. */
export type WorkspaceEvent = {
  [Name in DeploymentEvent['event']]: { id: string; event: Name; data: Extract<DeploymentEvent, { event: Name }>['data'] & { deployment_id: string } };
}[DeploymentEvent['event']];

export interface FollowOptions {
  /** Start after this event id (what a previous stream last delivered). */
  lastEventId?: string;
  signal?: AbortSignal;
  /** Called each time the stream is opened again after it dropped. */
  onReconnect?: (lastEventId: string | undefined) => void;
}

type Answer<T> = { data?: T; error?: unknown; response: Response };
type Page<T> = { resources: T[]; offset: number };

export type BerthClient = ReturnType<typeof createBerthClient>;

/** Consecutive failures to open the event stream before `followEvents` gives up. */
const STREAM_ATTEMPTS = 8;
/** Times a create is sent with one Idempotency-Key before its failure is final. */
const CREATE_ATTEMPTS = 4;
/** Reads and writes of one read-modify-write before a resource that keeps changing wins. */
const MODIFY_ATTEMPTS = 3;

/** Options of the calls that create or start something. */
export interface CreateOptions {
  /**
   * Sent as `Idempotency-Key` (a new UUID by default). The client sends a create again with
   * the same key when it may not have reached Berth or Berth could not finish it; pass
   * your own key to make your retries across processes safe as well.
   */
  idempotencyKey?: string;
}

/** Options of conditional writes. */
export interface WriteOptions {
  /** The `ETag` the resource was read with: the write fails with 412 `resource_changed` if it changed since. */
  ifMatch?: string;
}

/** A resource with the `ETag` it was read with. */
export interface Tagged<T> {
  data: T;
  etag: string | undefined;
}

/**
 * Failures after which a create is worth sending again with its key: it may not have
 * reached Berth, Berth failed (it keeps no answer then), or the first send still runs.
 */
const worthRepeating = (error: BerthApiError) =>
  error.status === 0 || error.status >= 500 || (error.status === 409 && error.code === 'idempotency_key_in_progress');

/** Waits `ms`, or less when `signal` aborts first. */
const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/** Sends of one read while Berth answers 503 (its database away for a moment, or load shed). */
const READ_ATTEMPTS = 4;
/** The longest wait before sending again, whatever `Retry-After` asks: a script would rather hear why. */
const RETRY_PAUSE_MAX_MS = 10_000;

/** An answer's `Retry-After` in seconds, when it gives a number. */
function retryAfterOf(headers: Headers): number | undefined {
  const seconds = Number(headers.get('retry-after') ?? Number.NaN);
  return Number.isFinite(seconds) ? seconds : undefined;
}

/** The wait before the next send of a call: the server's `Retry-After`, or a backoff from 250 ms; never above the cap. */
const retryPauseMs = (retryAfterSeconds: number | undefined, attempt: number) =>
  Math.min(retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : 250 * 2 ** (attempt - 1), RETRY_PAUSE_MAX_MS);

/**
 * Sends a read (GET or HEAD) again while Berth answers 503 with its `Retry-After`: a read
 * changes nothing, and a control plane whose database is away for a moment is something a
 * CI script should wait through, not fail on. Writes are left to their callers (a create
 * repeats with its Idempotency-Key, `create` below). The last answer is the caller's.
 */
function retryingReads(send: (request: Request) => Promise<Response>): (input: RequestInfo | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(request);
    for (let attempt = 1; ; attempt += 1) {
      const response = await send(request.clone());
      if (response.status !== 503 || attempt >= READ_ATTEMPTS || request.signal.aborted) return response;
      await response.body?.cancel();
      await pause(retryPauseMs(retryAfterOf(response.headers), attempt), request.signal);
      // Aborted while waiting: the caller hears it now, as fetch would tell it, not after the wait.
      request.signal.throwIfAborted();
    }
  };
}

export function createBerthClient({ baseUrl, apiKey, tenantId, csrfToken, fetch: fetchImpl }: BerthClientOptions) {
  const api: Client<paths> = createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: {
      ...(apiKey ? { 'x-api-key': apiKey } : {}),
      ...(tenantId ? { 'x-tenant-id': tenantId } : {}),
      ...(csrfToken ? { 'x-csrf-token': csrfToken } : {}),
    },
    ...(apiKey ? {} : { credentials: 'same-origin' as const }),
    // globalThis.fetch is called as a method: a browser refuses it detached from its window.
    fetch: retryingReads((request) => (fetchImpl ? fetchImpl(request) : globalThis.fetch(request))),
  });

  /** The answer's data, or a BerthApiError saying what failed. */
  async function call<T>(operation: string, request: () => Promise<Answer<T>>): Promise<T> {
    return (await answered(operation, request)).data as T;
  }

  /** The answer (data and response), or a BerthApiError saying what failed. */
  async function answered<T>(operation: string, request: () => Promise<Answer<T>>): Promise<Answer<T>> {
    let answer: Answer<T>;
    try {
      answer = await request();
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new BerthApiError(
        0,
        'unreachable',
        `could not reach Berth at ${baseUrl} (${cause?.code ?? cause?.message ?? (error as Error).message})`,
        operation,
      );
    }
    if (!answer.response.ok) {
      const { code, detail } = detailOf(answer.error, answer.response.statusText || 'request failed');
      throw new BerthApiError(
        answer.response.status,
        code,
        detail,
        operation,
        retryAfterOf(answer.response.headers),
        answer.response.headers.get('x-request-id') ?? undefined,
      );
    }
    return answer;
  }

  /** A create, with an Idempotency-Key, sent again with that key while that is safe and useful (`worthRepeating`). */
  async function create<T>(
    operation: string,
    send: (init: { headers: Record<string, string> }) => Promise<Answer<T>>,
    options: CreateOptions = {},
  ): Promise<T> {
    const headers = { 'idempotency-key': options.idempotencyKey ?? globalThis.crypto.randomUUID() };
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await call(operation, () => send({ headers }));
      } catch (error) {
        if (!(error instanceof BerthApiError) || attempt >= CREATE_ATTEMPTS || !worthRepeating(error)) throw error;
        await pause(retryPauseMs(error.retryAfterSeconds, attempt));
      }
    }
  }

  /** A GET with the answer's `ETag`. */
  async function tagged<T>(operation: string, request: () => Promise<Answer<T>>): Promise<Tagged<T>> {
    const answer = await answered(operation, request);
    return { data: answer.data as T, etag: answer.response.headers.get('etag') ?? undefined };
  }

  const conditional = (options: WriteOptions = {}) => ({ headers: options.ifMatch === undefined ? {} : { 'if-match': options.ifMatch } });

  /**
   * Read-modify-write: reads the resource with its `ETag`, asks `change` for the body to
   * write (undefined: nothing to write) and writes it with `If-Match`; when the resource
   * changed in between (412), reads it again and asks again.
   */
  async function modify<T, B, R>(
    read: () => Promise<Tagged<T>>,
    write: (body: B, options: WriteOptions) => Promise<R>,
    change: (current: T) => B | undefined,
  ): Promise<{ before: T; after: R | undefined }> {
    for (let attempt = 1; ; attempt += 1) {
      const { data, etag } = await read();
      const body = change(data);
      if (body === undefined) return { before: data, after: undefined };
      try {
        return { before: data, after: await write(body, { ifMatch: etag }) };
      } catch (error) {
        if (!(error instanceof BerthApiError) || error.code !== 'resource_changed' || attempt >= MODIFY_ATTEMPTS) throw error;
      }
    }
  }

  const path = <K extends string>(params: Record<K, string>) => ({ params: { path: params } });
  type Q<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer T } } } ? NonNullable<T> : never;

  const deployments = {
    list: (query: Q<'/v2/deployments'> = {}) => call('listDeployments', () => api.GET('/v2/deployments', { params: { query } })),
    get: (deploymentId: string) => call('getDeployment', () => api.GET('/v2/deployments/{deployment_id}', path({ deployment_id: deploymentId }))),
    getTagged: (deploymentId: string) => tagged('getDeployment', () => api.GET('/v2/deployments/{deployment_id}', path({ deployment_id: deploymentId }))),
    create: (body: Schemas['DeploymentCreate'], options?: CreateOptions) =>
      create('createDeployment', (init) => api.POST('/v2/deployments', { body, ...init }), options),
    update: (deploymentId: string, body: Schemas['DeploymentUpdate'], options?: WriteOptions) =>
      call('updateDeployment', () => api.PATCH('/v2/deployments/{deployment_id}', { ...path({ deployment_id: deploymentId }), body, ...conditional(options) })),
    /** Read-modify-write with If-Match (see `modify`). */
    modify: (deploymentId: string, change: (current: Deployment) => Schemas['DeploymentUpdate'] | undefined) =>
      modify(
        () => deployments.getTagged(deploymentId),
        (body: Schemas['DeploymentUpdate'], options) => deployments.update(deploymentId, body, options),
        change,
      ),
    /** Sets and removes secrets by name; the others keep their values, which the caller need not know. */
    mergeSecrets: (deploymentId: string, body: Schemas['SecretsMerge'], options?: WriteOptions) =>
      call('mergeDeploymentSecrets', () =>
        api.PATCH('/v2/deployments/{deployment_id}/secrets', { ...path({ deployment_id: deploymentId }), body, ...conditional(options) }),
      ),
    /** Clears the pin a rollback set (idempotent), so build on push follows the branch again. */
    unpin: (deploymentId: string) => call('unpinDeployment', () => api.POST('/v2/deployments/{deployment_id}/unpin', path({ deployment_id: deploymentId }))),
    delete: (deploymentId: string, options?: WriteOptions) =>
      call('deleteDeployment', () => api.DELETE('/v2/deployments/{deployment_id}', { ...path({ deployment_id: deploymentId }), ...conditional(options) })),
  };

  const revisions = {
    list: (deploymentId: string, query: Q<'/v2/deployments/{deployment_id}/revisions'> = {}) =>
      call('listRevisions', () => api.GET('/v2/deployments/{deployment_id}/revisions', { params: { path: { deployment_id: deploymentId }, query } })),
    get: (deploymentId: string, revisionId: string, query: Q<'/v2/deployments/{deployment_id}/revisions/{revision_id}'> = {}, signal?: AbortSignal) =>
      call('getRevision', () =>
        api.GET('/v2/deployments/{deployment_id}/revisions/{revision_id}', {
          params: { path: { deployment_id: deploymentId, revision_id: revisionId }, query },
          signal,
        }),
      ),
    create: (deploymentId: string, body: Schemas['RevisionCreate'], options?: CreateOptions) =>
      create(
        'createRevision',
        (init) => api.POST('/v2/deployments/{deployment_id}/revisions', { ...path({ deployment_id: deploymentId }), body, ...init }),
        options,
      ),
    redeploy: (deploymentId: string, revisionId: string, options?: CreateOptions) =>
      create(
        'redeployRevision',
        (init) =>
          api.POST('/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy', {
            ...path({ deployment_id: deploymentId, revision_id: revisionId }),
            ...init,
          }),
        options,
      ),
    interrupt: (deploymentId: string, revisionId: string, options?: CreateOptions) =>
      create(
        'interruptRevision',
        (init) =>
          api.POST('/v2/deployments/{deployment_id}/revisions/{revision_id}/interruption', {
            ...path({ deployment_id: deploymentId, revision_id: revisionId }),
            ...init,
          }),
        options,
      ),
    logs: (deploymentId: string, revisionId: string, query: Q<'/v2/deployments/{deployment_id}/revisions/{revision_id}/logs'>) =>
      call('listRevisionLogs', () =>
        api.GET('/v2/deployments/{deployment_id}/revisions/{revision_id}/logs', {
          params: { path: { deployment_id: deploymentId, revision_id: revisionId }, query },
        }),
      ),
  };

  const listeners = {
    list: (query: Q<'/v2/listeners'> = {}) => call('listListeners', () => api.GET('/v2/listeners', { params: { query } })),
    get: (listenerId: string) => call('getListener', () => api.GET('/v2/listeners/{listener_id}', path({ listener_id: listenerId }))),
    getTagged: (listenerId: string) => tagged('getListener', () => api.GET('/v2/listeners/{listener_id}', path({ listener_id: listenerId }))),
    create: (body: Schemas['ListenerCreate'], options?: CreateOptions) =>
      create('createListener', (init) => api.POST('/v2/listeners', { body, ...init }), options),
    update: (listenerId: string, body: Schemas['ListenerUpdate'], options?: WriteOptions) =>
      call('updateListener', () => api.PATCH('/v2/listeners/{listener_id}', { ...path({ listener_id: listenerId }), body, ...conditional(options) })),
    modify: (listenerId: string, change: (current: Schemas['Listener']) => Schemas['ListenerUpdate'] | undefined) =>
      modify(
        () => listeners.getTagged(listenerId),
        (body: Schemas['ListenerUpdate'], options) => listeners.update(listenerId, body, options),
        change,
      ),
    delete: (listenerId: string, options?: WriteOptions) =>
      call('deleteListener', () => api.DELETE('/v2/listeners/{listener_id}', { ...path({ listener_id: listenerId }), ...conditional(options) })),
  };

  const oauthProviders = {
    list: () => call('listOAuthProviders', () => api.GET('/v2/auth/providers')),
    get: (providerId: string) => call('getOAuthProvider', () => api.GET('/v2/auth/providers/{provider_id}', path({ provider_id: providerId }))),
    getTagged: (providerId: string) => tagged('getOAuthProvider', () => api.GET('/v2/auth/providers/{provider_id}', path({ provider_id: providerId }))),
    create: (body: Schemas['OAuthProviderCreate']) => call('createOAuthProvider', () => api.POST('/v2/auth/providers', { body })),
    update: (providerId: string, body: Schemas['OAuthProviderUpdate'], options?: WriteOptions) =>
      call('updateOAuthProvider', () => api.PATCH('/v2/auth/providers/{provider_id}', { ...path({ provider_id: providerId }), body, ...conditional(options) })),
    modify: (providerId: string, change: (current: Schemas['OAuthProvider']) => Schemas['OAuthProviderUpdate'] | undefined) =>
      modify(
        () => oauthProviders.getTagged(providerId),
        (body: Schemas['OAuthProviderUpdate'], options) => oauthProviders.update(providerId, body, options),
        change,
      ),
    delete: (providerId: string, options?: WriteOptions) =>
      call('deleteOAuthProvider', () => api.DELETE('/v2/auth/providers/{provider_id}', { ...path({ provider_id: providerId }), ...conditional(options) })),
  };

  const integrations = {
    list: () => call('listIntegrations', () => api.GET('/v1/integrations/codehost/install')),
    get: (integrationId: string) =>
      call('getIntegration', () => api.GET('/v1/integrations/codehost/{integration_id}', path({ integration_id: integrationId }))),
    getTagged: (integrationId: string) =>
      tagged('getIntegration', () => api.GET('/v1/integrations/codehost/{integration_id}', path({ integration_id: integrationId }))),
    create: (body: Schemas['IntegrationCreate'], options?: CreateOptions) =>
      create('createIntegration', (init) => api.POST('/v1/integrations/codehost', { body, ...init }), options),
    delete: (integrationId: string, options?: WriteOptions) =>
      call('deleteIntegration', () =>
        api.DELETE('/v1/integrations/codehost/{integration_id}', { ...path({ integration_id: integrationId }), ...conditional(options) }),
      ),
    repositories: (integrationId: string) =>
      call('listIntegrationRepositories', () => api.GET('/v1/integrations/codehost/{integration_id}/repos', path({ integration_id: integrationId }))),
  };

  const workspaces = {
    list: () => call('listWorkspaces', () => api.GET('/v1/workspaces')),
    create: (body: Schemas['WorkspaceCreate'], options?: CreateOptions) =>
      create('createWorkspace', (init) => api.POST('/v1/workspaces', { body, ...init }), options),
  };

  const apiKeys = {
    list: () => call('listApiKeys', () => api.GET('/v1/api-keys')),
    create: (body: Schemas['ApiKeyCreate'], options?: CreateOptions) => create('createApiKey', (init) => api.POST('/v1/api-keys', { body, ...init }), options),
    revoke: (keyId: string) => call('revokeApiKey', () => api.DELETE('/v1/api-keys/{key_id}', path({ key_id: keyId }))),
  };

  /** Sessions: sign in with the client's API key (the answer sets the session cookie), who is signed in, sign out. */
  const sessions = {
    create: () => call('createSession', () => api.POST('/v1/sessions', { body: {} })),
    current: () => call('getCurrentSession', () => api.GET('/v1/sessions/current')),
    delete: () => call('deleteCurrentSession', () => api.DELETE('/v1/sessions/current')),
  };

  const audit = {
    list: (query: Q<'/v1/audit-log'> = {}) => call('listAuditLog', () => api.GET('/v1/audit-log', { params: { query } })),
  };

  const events = {
    /** The workspace's events of every deployment, newest first by default; `next_cursor` goes on. */
    list: (query: Q<'/v2/events'> = {}) => call('listWorkspaceEvents', () => api.GET('/v2/events', { params: { query } })),
  };

  const webhooks = {
    list: (query: Q<'/v1/webhook-subscriptions'> = {}) => call('listWebhookSubscriptions', () => api.GET('/v1/webhook-subscriptions', { params: { query } })),
    get: (subscriptionId: string) =>
      call('getWebhookSubscription', () => api.GET('/v1/webhook-subscriptions/{subscription_id}', path({ subscription_id: subscriptionId }))),
    /** The answer holds the signing secret, this once. */
    create: (body: Schemas['WebhookSubscriptionCreate'], options?: CreateOptions) =>
      create('createWebhookSubscription', (init) => api.POST('/v1/webhook-subscriptions', { body, ...init }), options),
    delete: (subscriptionId: string) =>
      call('deleteWebhookSubscription', () => api.DELETE('/v1/webhook-subscriptions/{subscription_id}', path({ subscription_id: subscriptionId }))),
    deliveries: (subscriptionId: string, query: Q<'/v1/webhook-subscriptions/{subscription_id}/deliveries'> = {}) =>
      call('listWebhookDeliveries', () =>
        api.GET('/v1/webhook-subscriptions/{subscription_id}/deliveries', { params: { path: { subscription_id: subscriptionId }, query } }),
      ),
    redeliver: (subscriptionId: string, deliveryId: string, options?: CreateOptions) =>
      create(
        'redeliverWebhook',
        (init) =>
          api.POST('/v1/webhook-subscriptions/{subscription_id}/deliveries/{delivery_id}/redeliver', {
            params: { path: { subscription_id: subscriptionId, delivery_id: deliveryId } },
            ...init,
          }),
        options,
      ),
  };

  /**
   * Every page of a list endpoint that answers `{resources, offset}`, fetching the next page
   * only when asked: `for await (const page of client.pages((p) => client.deployments.list(p)))`.
   */
  async function* pages<T>(fetchPage: (page: { offset: number; limit: number }) => Promise<Page<T>>, { limit = 100 } = {}): AsyncGenerator<T[]> {
    let offset = 0;
    for (;;) {
      const page = await fetchPage({ offset, limit });
      if (page.resources.length > 0) yield page.resources;
      if (page.resources.length < limit || page.offset <= offset) return;
      offset = page.offset;
    }
  }

  /**
   * The revision once it is terminal, or as it is when `timeoutSeconds` pass (check with
   * `isTerminal`). Each request is the server's long poll (`?wait_for_terminal=`).
   */
  async function waitForRevision(
    deploymentId: string,
    revisionId: string,
    { timeoutSeconds = 600, signal }: { timeoutSeconds?: number; signal?: AbortSignal } = {},
  ) {
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (;;) {
      const remaining = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
      const revision = await revisions.get(deploymentId, revisionId, { wait_for_terminal: Math.min(300, remaining) }, signal);
      if (isTerminal(revision.status) || Date.now() >= deadline) return revision;
    }
  }

  /**
   * A deployment's events (`GET /v2/deployments/{id}/events`, Server-Sent Events) until
   * `signal` aborts. When the connection drops the stream is opened again with
   * `Last-Event-ID`, so no event is lost or repeated (also after a 429 or 5xx answer, up to
   * 8 failures in a row); a refusal (e.g. 404, 401) throws.
   */
  function followEvents(deploymentId: string, options: FollowOptions = {}): AsyncGenerator<DeploymentEvent> {
    return follow<DeploymentEvent>('streamDeploymentEvents', options, (headers) =>
      api.GET('/v2/deployments/{deployment_id}/events', {
        params: { path: { deployment_id: deploymentId } },
        headers,
        parseAs: 'stream',
        signal: options.signal,
      }),
    );
  }

  /**
   * The events of every deployment of the workspace (`GET /v2/events/stream`), each with its
   * `deployment_id`, from the event after `lastEventId` (without it: from now on; read the
   * history with `events.list`), resuming as `followEvents` does.
   */
  function followWorkspaceEvents(options: FollowOptions & Q<'/v2/events/stream'> = {}): AsyncGenerator<WorkspaceEvent> {
    const { deployment_id, event } = options;
    const query = { ...(deployment_id ? { deployment_id } : {}), ...(event ? { event } : {}) };
    return follow<WorkspaceEvent>('streamWorkspaceEvents', options, (headers) =>
      api.GET('/v2/events/stream', { params: { query }, headers, parseAs: 'stream', signal: options.signal }),
    );
  }

  async function* follow<E extends { id: string }>(
    operation: string,
    { lastEventId, signal, onReconnect }: FollowOptions,
    open: (headers: Record<string, string>) => Promise<Answer<ReadableStream<Uint8Array> | null>>,
  ): AsyncGenerator<E> {
    let last = lastEventId;
    let failures = 0;
    const retryMs = 250;
    for (let attempt = 0; !signal?.aborted; attempt++) {
      if (attempt > 0) {
        onReconnect?.(last);
        await new Promise((resolve) => setTimeout(resolve, Math.min(retryMs * 2 ** Math.min(failures, 4), 5000)));
        if (signal?.aborted) return;
      }
      let body: ReadableStream<Uint8Array>;
      try {
        const stream = await call(operation, () => open({ accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) }));
        if (!stream) throw new BerthApiError(0, 'unreachable', 'the event stream answered without a body', operation);
        body = stream;
      } catch (error) {
        if (signal?.aborted) return;
        // Unreachable, overloaded or restarting (behind a proxy): try again; a refusal is final.
        const passing = error instanceof BerthApiError && (error.status === 0 || error.status === 429 || error.status >= 500);
        if (passing && ++failures < STREAM_ATTEMPTS) continue;
        throw error;
      }
      failures = 0;
      try {
        const events = body
          .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
          .pipeThrough(new EventSourceParserStream());
        for await (const message of readAll(events as unknown as ReadableStream<{ id?: string; event?: string; data: string }>)) {
          if (message.event !== 'status' && message.event !== 'log' && message.event !== 'push_ignored_pinned') continue;
          if (message.id) last = message.id;
          yield { id: message.id ?? '', event: message.event, data: JSON.parse(message.data) } as unknown as E;
        }
      } catch (error) {
        if (signal?.aborted) return;
        if ((error as Error).name !== 'AbortError' && !(error instanceof TypeError)) throw error;
      }
    }
  }

  return {
    api,
    deployments,
    revisions,
    listeners,
    oauthProviders,
    integrations,
    workspaces,
    apiKeys,
    sessions,
    audit,
    events,
    webhooks,
    pages,
    waitForRevision,
    followEvents,
    followWorkspaceEvents,
  };
}

/** A stream's chunks, read with a reader: not every browser iterates a ReadableStream with `for await`. */
async function* readAll<T>(stream: ReadableStream<T>): AsyncGenerator<T> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
