import { useRef, useState } from 'preact/hooks';
import { type Deployment, isTerminal, type Revision } from '../client/index.js';
import { useWorkplace } from './context.js';
import { describeError, may } from './session.js';

/**
 * What can be done to a deployment, each offered only when the key's role allows it: a new
 * revision (of an image deployment: another image; otherwise the same source again),
 * redeploying the revision shown (an older one: a rollback), interrupting it while it runs,
 * and deleting the deployment after a confirmation naming what goes.
 */
export function Actions({
  deployment,
  revision,
  onChanged,
  onDeleted,
}: {
  deployment: Deployment;
  revision: Revision | undefined;
  onChanged(): void;
  onDeleted(): void;
}) {
  const { session, client } = useWorkplace();
  const { busy, error, call } = useCall();
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  const image = ((deployment.source_revision_config ?? {}) as { image_uri?: string | null }).image_uri ?? '';
  const [imageUri, setImageUri] = useState(image);
  const id = deployment.id;
  const can = {
    create: may(session, 'POST /v2/deployments/{deployment_id}/revisions', id),
    redeploy: revision !== undefined && may(session, 'POST /v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy', id),
    interrupt:
      revision !== undefined && !isTerminal(revision.status) && may(session, 'POST /v2/deployments/{deployment_id}/revisions/{revision_id}/interruption', id),
    delete: may(session, 'DELETE /v2/deployments/{deployment_id}', id),
  };
  if (!can.create && !can.redeploy && !can.interrupt && !can.delete) return null;

  const run = (action: () => Promise<unknown>, then: () => void = onChanged) => call(action, then);

  return (
    <div class="actions" data-testid="actions">
      <h2>Actions</h2>
      {can.create && (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void run(() => client.revisions.create(id, image ? { source_revision_config: { image_uri: imageUri.trim() } } : {}));
          }}
        >
          {image && (
            <label>
              Image <input name="image_uri" value={imageUri} required onInput={(event) => setImageUri(event.currentTarget.value)} />
            </label>
          )}
          <button type="submit" disabled={busy}>
            New revision
          </button>
        </form>
      )}
      {can.redeploy && revision && (
        <button type="button" disabled={busy} onClick={() => void run(() => client.revisions.redeploy(id, revision.id))}>
          {redeployLabel(deployment, revision)}
        </button>
      )}
      {can.interrupt && revision && (
        <button type="button" disabled={busy} onClick={() => void run(() => client.revisions.interrupt(id, revision.id))}>
          Interrupt #{revision.revision_number}
        </button>
      )}
      {can.delete && (
        <>
          <button type="button" class="danger" disabled={busy} onClick={() => dialog.current?.showModal()}>
            Delete…
          </button>
          <dialog ref={dialog} aria-labelledby="delete-title" onClose={() => setTyped('')}>
            <form
              method="dialog"
              onSubmit={(event) => {
                event.preventDefault();
                dialog.current?.close();
                void run(() => client.deployments.delete(id), onDeleted);
              }}
            >
              <h3 id="delete-title">Delete {deployment.name}?</h3>
              <p>
                This stops what serves at {deployment.url ?? 'its URL'} and removes the deployment <strong>{deployment.name}</strong> with all its revisions,
                their logs and its secrets. It cannot be undone.
              </p>
              <label>
                Type <strong>{deployment.name}</strong> to confirm <input value={typed} onInput={(event) => setTyped(event.currentTarget.value)} />
              </label>
              <div class="buttons">
                <button type="button" onClick={() => dialog.current?.close()}>
                  Cancel
                </button>
                <button type="submit" class="danger" disabled={typed !== deployment.name}>
                  Delete {deployment.name}
                </button>
              </div>
            </form>
          </dialog>
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

/**
 * A request a button sends: `busy` while it runs (the button is disabled, so it is not sent
 * twice), its error kept until the next try, and `then` once it succeeded.
 */
export function useCall() {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function call(action: () => Promise<unknown>, then: () => void): Promise<void> {
    setBusy(true);
    setError(null);
    try {
      await action();
      then();
    } catch (caught) {
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, call };
}

/** Redeploying the revision that serves restarts it; redeploying an earlier one that served is a rollback. */
function redeployLabel(deployment: Deployment, revision: Revision): string {
  if (revision.id === deployment.active_revision_id) return 'Redeploy';
  return revision.status === 'DEPLOYED' ? `Roll back to #${revision.revision_number}` : `Redeploy #${revision.revision_number}`;
}
