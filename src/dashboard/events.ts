import { useEffect, useState } from 'preact/hooks';
import type { BerthClient, DeploymentEvent } from '../client/index.js';
import { BerthApiError } from '../client/index.js';
import { describeError } from './session.js';

export type StatusEvent = Extract<DeploymentEvent, { event: 'status' }>;
export type LogEvent = Extract<DeploymentEvent, { event: 'log' }>;
export type IgnoredPushEvent = Extract<DeploymentEvent, { event: 'push_ignored_pinned' }>;

/** Log lines kept per deployment on screen by default; the full logs stay on the server. */
const LOG_LINES_KEPT = 500;

export interface DeploymentEvents {
  statuses: StatusEvent[];
  logs: LogEvent[];
  /** Pushes build on push left alone because a rollback pinned the deployment. */
  ignoredPushes: IgnoredPushEvent[];
  /** `live` while the stream is open, `reconnecting` after it dropped (it resumes where it stopped). */
  connection: 'connecting' | 'live' | 'reconnecting' | 'ended';
  error: string | null;
}

/**
 * A deployment's event stream, from its first event on, through the client's `followEvents`:
 * a dropped connection (or a tab that slept) resumes with `Last-Event-ID`, and ids are
 * checked here too, so no event shows twice. `onStatus` is told of each status change.
 */
export function useDeploymentEvents(
  client: BerthClient,
  deploymentId: string,
  onStatus: (event: StatusEvent) => void,
  onSignedOut: () => void,
  linesKept = LOG_LINES_KEPT,
): DeploymentEvents {
  const [state, setState] = useState<DeploymentEvents>({ statuses: [], logs: [], ignoredPushes: [], connection: 'connecting', error: null });

  useEffect(() => {
    const abort = new AbortController();
    const statuses: StatusEvent[] = [];
    let logs: LogEvent[] = [];
    const ignoredPushes: IgnoredPushEvent[] = [];
    let lastId = 0;
    let pending: ReturnType<typeof setTimeout> | undefined;
    // Events arrive in bursts (a whole history at first): one render per burst.
    const flush = (connection: DeploymentEvents['connection'] = 'live') => {
      pending = undefined;
      setState({ statuses: [...statuses], logs: [...logs], ignoredPushes: [...ignoredPushes], connection, error: null });
    };
    setState({ statuses: [], logs: [], ignoredPushes: [], connection: 'connecting', error: null });
    (async () => {
      try {
        const stream = client.followEvents(deploymentId, {
          signal: abort.signal,
          onReconnect: () => setState((current) => ({ ...current, connection: 'reconnecting' })),
        });
        for await (const event of stream) {
          const id = Number(event.id);
          if (Number.isFinite(id) && id <= lastId) continue;
          if (Number.isFinite(id)) lastId = id;
          if (event.event === 'status') {
            statuses.push(event);
            onStatus(event);
          } else if (event.event === 'log') {
            logs.push(event);
            if (logs.length > linesKept * 2) logs = logs.slice(-linesKept);
          } else {
            ignoredPushes.push(event);
          }
          pending ??= setTimeout(flush, 16);
        }
        if (!abort.signal.aborted) flush('ended');
      } catch (error) {
        if (abort.signal.aborted) return;
        if (error instanceof BerthApiError && error.status === 401) return onSignedOut();
        setState((current) => ({ ...current, connection: 'ended', error: describeError(error) }));
      }
    })();
    return () => {
      abort.abort();
      if (pending) clearTimeout(pending);
    };
    // onStatus and onSignedOut are callbacks of the page; a new stream only for another deployment.
  }, [client, deploymentId, linesKept]);

  return state;
}
