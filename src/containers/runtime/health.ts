import { setTimeout as delay } from 'node:timers/promises';
import { DriverError, type StepContext } from '../driver.js';
import type { ResolvedRuntime } from '../detect.js';
import { CONTAINER_PORT, containerState } from './containers.js';
import { describeGraphs, type ExpectedGraph, listedGraphs } from './graphs.js';
import { errorMessage, formatSeconds, safeLog, throwIfAborted } from './step.js';

const PROBE_TIMEOUT_MS = 2_000;
/**
 * A refused connection costs next to nothing, so /ok is asked often: the server gets traffic
 * within this long of listening. The container's state costs a runtime command (a process
 * of its own, competing with the starting server for the CPU), so it is asked less often.
 */
const PROBE_INTERVAL_MS = 50;
const STATE_INTERVAL_MS = 1_000;
/**
 * How long graphs may be missing once GET /ok answers. The LangGraph.js server loads every
 * graph before it listens, the Python one before its startup completes; the grace only
 * covers servers that register them a little later.
 */
const GRAPH_GRACE_MS = 5_000;
/** States (podman's and docker's) in which a container may still come to answer. */
const STARTING_STATES = new Set(['created', 'configured', 'initialized', 'running']);

/**
 * Waits until the container answers GET /ok with 200 and, for an agent server, lists every
 * graph of its configuration (`graphs`) among its assistants: only then may it get traffic.
 */
export async function waitHealthy(
  runtime: ResolvedRuntime,
  name: string,
  url: string,
  port: number,
  timeoutMs: number | null,
  context: StepContext,
  graphs: ExpectedGraph[] = [],
): Promise<void> {
  const deadline = timeoutMs === null ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
  const startedAt = Date.now();
  let answeredOkAt: number | null = null;
  let lastProblem = 'no answer yet';
  let nextProgressAt = startedAt + 10_000;
  let nextStateAt = startedAt + STATE_INTERVAL_MS;
  for (;;) {
    throwIfAborted(context.signal, `waiting for GET /ok on port ${port}`);
    const probe = await probeOk(`${url}/ok`, context.signal);
    // Another process could have taken the port between allocation and the container's bind;
    // a 200 only counts while our container is the one still running.
    // The state (a runtime command) and the graphs (a request) are asked side by side: both
    // lie between the server listening and its first traffic.
    const [ours, check] = probe === 200 ? await Promise.all([containerState(runtime, name), checkGraphs(url, graphs, context.signal)]) : [];
    if (ours?.status === 'running' && check) {
      const { missing, note } = check;
      if (note) await safeLog(context, note.level, note.message);
      if (missing === null) return;
      answeredOkAt ??= Date.now();
      lastProblem = `GET /ok answered 200 but ${missing}`;
      if (Date.now() - answeredOkAt >= GRAPH_GRACE_MS) {
        throw new DriverError(`The agent server answered GET /ok but ${missing}; no traffic was sent to it. See the deploy logs for its output.`);
      }
    } else {
      lastProblem = typeof probe === 'number' ? `HTTP ${probe}` : probe;
    }
    throwIfAborted(context.signal, `waiting for GET /ok on port ${port}`);

    const state = Date.now() >= nextStateAt ? await containerState(runtime, name) : 'not asked';
    if (state !== 'not asked') nextStateAt = Date.now() + STATE_INTERVAL_MS;
    if (state && state !== 'not asked' && !STARTING_STATES.has(state.status)) {
      const exit = state.status === 'exited' || state.status === 'stopped' ? `exited with code ${state.exitCode}` : `is ${state.status}`;
      throw new DriverError(
        `The container ${exit} before answering GET /ok on port ${port}; see the deploy logs for its output. ` +
          `Check that the image starts an agent server listening on $PORT (${CONTAINER_PORT}).`,
      );
    }
    if (!state) {
      throw new DriverError(`The container ${name} disappeared before answering GET /ok on port ${port}; something else removed it.`);
    }

    const now = Date.now();
    if (now >= deadline) {
      throw new DriverError(
        `The container kept running but did not answer GET /ok with 200 on port ${port} within ${formatSeconds(timeoutMs ?? 0)} ` +
          `(last attempt: ${lastProblem}); see the deploy logs for its output. ` +
          `Check that the server listens on 0.0.0.0:$PORT (${CONTAINER_PORT}) inside the container and serves GET /ok, or raise the deploy timeout if it starts slowly.`,
      );
    }
    if (now >= nextProgressAt) {
      await context.log('INFO', `Still waiting for GET /ok after ${formatSeconds(now - startedAt)} (last attempt: ${lastProblem})`);
      nextProgressAt = now + 10_000;
    }
    await sleep(Math.min(PROBE_INTERVAL_MS, Math.max(0, deadline - now)), context.signal);
  }
}

interface GraphCheck {
  /** Null when every graph is served (or the server cannot be asked); else what is wrong. */
  missing: string | null;
  /** What to say in the deploy log, once the container is known to be ours. */
  note?: { level: 'INFO' | 'WARNING'; message: string };
}

async function checkGraphs(url: string, graphs: ExpectedGraph[], signal: AbortSignal): Promise<GraphCheck> {
  if (graphs.length === 0) return { missing: null };
  const listing = await listedGraphs(url, graphs, signal);
  if (listing.kind === 'unverifiable')
    return { missing: null, note: { level: 'WARNING', message: `Could not check which graphs the agent server serves: ${listing.why}` } };
  if (listing.kind === 'failed') return { missing: `${listing.why}, so its graphs could not be checked` };
  if (listing.missing.length === 0) {
    return {
      missing: null,
      note: { level: 'INFO', message: `The agent server serves every graph of its configuration: ${graphs.map((graph) => graph.id).join(', ')}` },
    };
  }
  return { missing: `it does not serve the graph(s) ${describeGraphs(listing.missing)} of its configuration (no assistant for them)` };
}

async function probeOk(url: string, signal: AbortSignal): Promise<number | string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]), redirect: 'manual' });
    await response.body?.cancel();
    return response.status;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    if (cause?.code === 'ECONNREFUSED') return 'connection refused';
    if ((error as Error).name === 'TimeoutError') return `no answer within ${formatSeconds(PROBE_TIMEOUT_MS)}`;
    return errorMessage(error);
  }
}

/** Waits, or less when the signal aborts (which ends the wait, not the caller). */
const sleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined);
