import { type Deployment, isTerminal, type Revision } from '../client/index.js';
import type { StatusEvent } from './events.js';
import { formatTime, shortId } from './format.js';

export interface Health {
  serving: boolean;
  /** One line: what serves and since when, or why nothing does. */
  summary: string;
  /** What the newest revision is doing, when it is not the one serving. */
  latest: string | null;
}

/**
 * The deployment's health in words, from what the API already says: its status, the serving
 * revision's status and the latest status events. Berth runs no health probe of its own
 * beyond the deploy's check, so this says what was last known, never more.
 */
export function healthOf(deployment: Deployment, revisions: Revision[], statuses: StatusEvent[]): Health {
  const name = (id: string) => {
    const revision = revisions.find((candidate) => candidate.id === id);
    return revision ? `#${revision.revision_number} (${shortId(id)})` : shortId(id);
  };
  const lastOf = (id: string) => statuses.findLast((event) => event.data.revision_id === id);
  const servingId = deployment.active_revision_id;
  const latestId = deployment.latest_revision_id;
  const latestRevision = revisions.find((revision) => revision.id === latestId);
  const latestEvent = latestId ? lastOf(latestId) : undefined;
  const latestStatus = latestEvent?.data.status ?? latestRevision?.status;
  const latestMessage = latestEvent ? latestEvent.data.message : (latestRevision?.status_message ?? null);
  const latestSince = latestEvent ? ` since ${formatTime(latestEvent.data.at)}` : '';

  if (deployment.status === 'AWAITING_DELETE') return { serving: false, summary: 'Not serving: the deployment is being deleted.', latest: null };
  if (servingId && deployment.status === 'READY') {
    const deployed = statuses.findLast((event) => event.data.revision_id === servingId && event.data.status === 'DEPLOYED');
    const summary = `Serving revision ${name(servingId)}${deployed ? ` since ${formatTime(deployed.data.at)}` : ''}.`;
    if (!latestId || latestId === servingId || !latestStatus) return { serving: true, summary, latest: null };
    const latest = isTerminal(latestStatus)
      ? `Revision ${name(latestId)} did not replace it: it ended in ${latestStatus}${latestMessage ? '; its timeline says why' : ''}.`
      : `Revision ${name(latestId)} is on its way: ${latestStatus}${latestSince}.`;
    return { serving: true, summary, latest };
  }
  if (deployment.status === 'UNKNOWN') return { serving: false, summary: 'Not known: Berth could not tell whether the deployment serves.', latest: null };
  if (!latestId || !latestStatus) return { serving: false, summary: 'Not serving: no revision yet.', latest: null };
  if (!isTerminal(latestStatus))
    return { serving: false, summary: `Not serving yet: revision ${name(latestId)} is ${latestStatus}${latestSince}.`, latest: null };
  return {
    serving: false,
    // The reason itself is told once, by the revision's timeline beside this panel.
    summary: `Not serving: revision ${name(latestId)} ended in ${latestStatus}${latestMessage ? '; its timeline says why.' : '.'}`,
    latest: null,
  };
}

export function HealthPanel({ health }: { health: Health }) {
  return (
    <div class={`health ${health.serving ? 'health-serving' : 'health-not-serving'}`} data-testid="health">
      <p>{health.summary}</p>
      {health.latest && <p>{health.latest}</p>}
    </div>
  );
}
