import type { Deployment, Revision } from '../client/index.js';
import { useWorkplace } from './context.js';
import type { IgnoredPushEvent } from './events.js';
import { formatTime, shortId } from './format.js';
import { useCall } from './actions.js';
import { may } from './session.js';

/**
 * A rollback's pin: since when and to which revision the deployment holds, Unpin when the
 * key may, and the pushes build on push left alone meanwhile (from the event stream).
 */
export function PinPanel({
  deployment,
  revisions,
  ignoredPushes,
  onChanged,
}: {
  deployment: Deployment;
  revisions: Revision[];
  ignoredPushes: IgnoredPushEvent[];
  onChanged(): void;
}) {
  const { session, client } = useWorkplace();
  const { busy, error, call } = useCall();
  if (!deployment.pinned_revision_id && ignoredPushes.length === 0) return null;
  const pinned = revisions.find((revision) => revision.id === deployment.pinned_revision_id);
  const canUnpin = may(session, 'POST /v2/deployments/{deployment_id}/unpin', deployment.id);

  return (
    <div class="pin" data-testid="pin">
      {deployment.pinned_revision_id ? (
        <>
          <h2>Pinned by a rollback</h2>
          <p>
            Holding revision <code>{pinned ? `#${pinned.revision_number}` : shortId(deployment.pinned_revision_id)}</code> since{' '}
            <time dateTime={deployment.pinned_at ?? undefined}>{formatTime(deployment.pinned_at)}</time>: pushes to the branch build nothing until it is
            unpinned.
          </p>
          {canUnpin && (
            <button type="button" disabled={busy} onClick={() => void call(() => client.deployments.unpin(deployment.id), onChanged)}>
              Unpin
            </button>
          )}
        </>
      ) : (
        <h2>Not pinned</h2>
      )}
      {ignoredPushes.length > 0 && (
        <>
          <h3>Pushes ignored while pinned</h3>
          <ul class="ignored-pushes">
            {ignoredPushes.map((push) => (
              <li key={push.id}>
                <code>{push.data.commit.slice(0, 12)}</code> {push.data.message} <time dateTime={push.data.at}>{formatTime(push.data.at)}</time>
              </li>
            ))}
          </ul>
        </>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </div>
  );
}
