import type { TSchema } from 'typebox';
import { Check } from 'typebox/schema'; // typebox/value's Check calls this one; the value toolkit is 300 modules more
import {
  DesiredState,
  type DesiredStateView,
  HeartbeatResult,
  type HeartbeatInput,
  type HeartbeatResultView,
  LISTENER_PROTOCOL_HEADER,
  LISTENER_PROTOCOL_PREFIX,
  LISTENER_PROTOCOL_VERSION,
  ReportsResult,
  type ReportsInput,
  type ReportsResultView,
} from '../contract/listener-protocol.js';

/** A call that did not get a usable answer. `retryable`: the same call may succeed later. */
export class ProtocolError extends Error {
  override name = 'ProtocolError';
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status: number | null,
  ) {
    super(message);
  }
}

interface CallOptions {
  body?: unknown;
  signal: AbortSignal;
  timeoutMs?: number;
}

const CALL_TIMEOUT_MS = 30_000;
/** A long poll may take `wait` seconds; the server gets this much longer to answer. */
const POLL_GRACE_MS = 15_000;

/**
 * The agent's side of the listener protocol: three calls with the contract's bodies, the
 * listener key in `X-Api-Key` and the protocol version header. Answers are checked against
 * the contract before use.
 */
export class ProtocolClient {
  #lastAnsweredSentAt = 0;
  readonly #inFlight = new Set<{ sentAt: number }>();

  constructor(
    private readonly baseUrl: string,
    private readonly key: string,
    private readonly version: string,
  ) {}

  /**
   * When Berth last heard from this agent, as far as it can tell: the latest send time of a
   * call that Berth answered or that is still waiting for its answer (a long poll counts from
   * its start, as Berth counts it). A heartbeat is only needed when this grows old.
   */
  heardAt(): number {
    let latest = this.#lastAnsweredSentAt;
    for (const call of this.#inFlight) latest = Math.max(latest, call.sentAt);
    return latest;
  }

  heartbeat(signal: AbortSignal): Promise<HeartbeatResultView> {
    const body: HeartbeatInput = { version: this.version };
    return this.call('POST', '/heartbeat', HeartbeatResult, { body, signal });
  }

  /** The desired state; with `since`, waits up to `waitSeconds` for a newer generation. */
  state(since: number | undefined, waitSeconds: number, signal: AbortSignal): Promise<DesiredStateView> {
    const query = new URLSearchParams({ wait: String(waitSeconds) });
    if (since !== undefined) query.set('since', String(since));
    return this.call('GET', `/state?${query}`, DesiredState, { signal, timeoutMs: waitSeconds * 1000 + POLL_GRACE_MS });
  }

  reports(body: ReportsInput, signal: AbortSignal): Promise<ReportsResultView> {
    return this.call('POST', '/reports', ReportsResult, { body, signal });
  }

  private async call<T>(method: string, route: string, schema: TSchema, options: CallOptions): Promise<T> {
    const call = { sentAt: Date.now() };
    this.#inFlight.add(call);
    try {
      return await this.send<T>(method, route, schema, options, call.sentAt);
    } finally {
      this.#inFlight.delete(call);
    }
  }

  private async send<T>(method: string, route: string, schema: TSchema, options: CallOptions, sentAt: number): Promise<T> {
    const what = `${method} ${LISTENER_PROTOCOL_PREFIX}${route.replace(/\?.*$/, '')}`;
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${LISTENER_PROTOCOL_PREFIX}${route}`, {
        method,
        headers: {
          [LISTENER_PROTOCOL_HEADER]: String(LISTENER_PROTOCOL_VERSION),
          'x-api-key': this.key,
          accept: 'application/json',
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs ?? CALL_TIMEOUT_MS)]),
      });
    } catch (error) {
      throw new ProtocolError(`${what}: ${networkProblem(error)}`, true, null);
    }
    const text = await response.text().catch(() => '');
    if (response.ok) this.#lastAnsweredSentAt = Math.max(this.#lastAnsweredSentAt, sentAt);
    if (!response.ok) {
      const status = response.status;
      // Throttled, overloaded, restarting or a proxy in between: the same call can succeed later.
      const retryable = status >= 500 || status === 408 || status === 429 || status === 401 || status === 403;
      throw new ProtocolError(`${what} answered ${status}: ${detailOf(text)}`, retryable, status);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ProtocolError(`${what} answered ${response.status} with a body that is not JSON`, true, response.status);
    }
    if (!Check(schema, parsed)) {
      throw new ProtocolError(`${what} answered a body that does not match listener protocol v${LISTENER_PROTOCOL_VERSION}`, true, response.status);
    }
    return parsed as T;
  }
}

function networkProblem(error: unknown): string {
  const failure = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (failure.name === 'TimeoutError') return 'no answer in time';
  if (failure.name === 'AbortError') return 'cancelled';
  return failure.cause?.code ?? failure.cause?.message ?? failure.message ?? 'network error';
}

/** The `detail` of a FastAPI-shaped error, bounded; never the request (which holds the key). */
function detailOf(text: string): string {
  try {
    const body = JSON.parse(text) as { detail?: unknown; code?: unknown };
    const detail = typeof body.detail === 'string' ? body.detail : JSON.stringify(body.detail ?? body);
    return `${detail.slice(0, 300)}${typeof body.code === 'string' ? ` (${body.code})` : ''}`;
  } catch {
    return text.slice(0, 200) || 'no detail';
  }
}
