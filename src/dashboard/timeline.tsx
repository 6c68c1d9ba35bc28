import { useEffect, useState } from 'preact/hooks';
import { isTerminal } from '../client/index.js';
import { plainText } from './ansi.js';
import type { LogEvent, StatusEvent } from './events.js';
import { formatDuration, formatTime } from './format.js';
import { StatusBadge } from './status.js';

/** Log lines shown under a failed revision. */
const LAST_LINES = 15;

/**
 * A revision's way to its final status: each status a step, with when it began and how long
 * it lasted (the step still running counts up). On failure: the reason and the last lines
 * of its log.
 */
export function Timeline({ revisionId, statuses, logs }: { revisionId: string; statuses: StatusEvent[]; logs: LogEvent[] }) {
  const steps = statuses.filter((event) => event.data.revision_id === revisionId);
  const last = steps.at(-1);
  const running = last !== undefined && !isTerminal(last.data.status);
  const now = useNow(running);
  const failed = last !== undefined && last.data.status.endsWith('_FAILED');
  const failingStep = failed ? steps.at(-2) : undefined;
  const lines = failed ? logs.filter((event) => event.data.revision_id === revisionId).slice(-LAST_LINES) : [];

  if (steps.length === 0) return <p class="loading">Waiting for the revision's first status…</p>;
  return (
    <div class="timeline">
      <ol aria-label="Revision timeline" data-testid="timeline">
        {steps.map((step, index) => {
          const next = steps[index + 1];
          const began = Date.parse(step.data.at);
          const ended = next ? Date.parse(next.data.at) : isTerminal(step.data.status) ? undefined : now;
          return (
            <li key={step.id} data-status={step.data.status} class={index === steps.length - 1 ? 'current' : undefined}>
              <StatusBadge status={step.data.status} />
              <time dateTime={step.data.at}>{formatTime(step.data.at)}</time>
              {ended !== undefined && <span class="duration">{formatDuration(ended - began)}</span>}
              {/* A failure's reason is told once, below, with the failing step and the last log lines. */}
              {step.data.message && !(failed && step === last) && <p class="message">{step.data.message}</p>}
            </li>
          );
        })}
      </ol>
      {failed && (
        <div class="failure" role="status">
          <h3>Why it failed</h3>
          {failingStep && (
            <p class="failing-step">
              Failed during <StatusBadge status={failingStep.data.status} />
            </p>
          )}
          <p data-testid="failure-reason">{last.data.message ?? `The revision ended in ${last.data.status}.`}</p>
          {lines.length > 0 && (
            <>
              <h4>Last log lines</h4>
              <pre class="log">{lines.map((line) => plainText(line.data.message)).join('\n')}</pre>
            </>
          )}
        </div>
      )}
    </div>
  );
}

/** The time, ticking each second while `ticking`. */
function useNow(ticking: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!ticking) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [ticking]);
  return now;
}
