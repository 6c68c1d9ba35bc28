import { useRoute } from 'preact-iso';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { BerthApiError, type Deployment } from '../client/index.js';
import { useWorkplace } from './context.js';
import { PreviewSettingsForm } from './preview-settings.js';
import { mayHavePreviews } from './previews.js';
import { describeError, may } from './session.js';

/** What the page holds of the deployment: no secret value is ever in state that renders. */
interface Loaded {
  deployment: Omit<Deployment, 'secrets'>;
  secretNames: string[];
  etag: string | undefined;
}

/**
 * A deployment's settings and secrets. Names are shown, values are write-only: the API answers
 * a session no value, and secrets are saved by name (PATCH …/secrets), sending only what
 * changed. Settings that change in place (display name, build on push) are saved without a
 * revision; every change of secrets makes a new revision (the API's rule), so secrets have
 * only "save and deploy".
 * Writes carry If-Match: someone else's change in between is a 412, told and reloaded.
 */
export function SettingsPage() {
  const { session, client, link, signedOut } = useWorkplace();
  const { params } = useRoute();
  const deploymentId = params.deploymentId!;
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [displayName, setDisplayName] = useState('');
  const [buildOnPush, setBuildOnPush] = useState(false);
  const [secretName, setSecretName] = useState('');
  const [removed, setRemoved] = useState<string[]>([]);
  const valueInput = useRef<HTMLInputElement>(null);

  const load = useCallback(async () => {
    try {
      const { data, etag } = await client.deployments.getTagged(deploymentId);
      const { secrets: current, ...deployment } = data;
      setLoaded({ deployment, secretNames: current.map((secret) => secret.name), etag });
      setDisplayName(deployment.display_name ?? '');
      setBuildOnPush(deployment.source_config.build_on_push ?? false);
      setRemoved([]);
    } catch (caught) {
      if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
      setError(describeError(caught));
    }
  }, [client, deploymentId, signedOut]);
  useEffect(() => void load(), [load]);

  if (!loaded) {
    return error ? (
      <section>
        <h1>Settings</h1>
        <p role="alert" class="error">
          {error}
        </p>
      </section>
    ) : (
      <p class="loading">Loading…</p>
    );
  }
  const { deployment } = loaded;
  const name = deployment.display_name || deployment.name;
  const canWrite = may(session, 'PATCH /v2/deployments/{deployment_id}', deploymentId);
  const canWriteSecrets = may(session, 'PATCH /v2/deployments/{deployment_id}/secrets', deploymentId);
  const codeHosted = deployment.source_config.repo_url !== null;

  async function save(write: (ifMatch: string | undefined) => Promise<unknown>, done: string) {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await write(loaded!.etag);
      setNotice(done);
      await load();
    } catch (caught) {
      if (caught instanceof BerthApiError && caught.code === 'resource_changed') {
        setError('Someone else changed this deployment since this page read it (or a deploy moved on). It has been reloaded: check it and save again.');
        await load();
      } else {
        setError(describeError(caught));
      }
    } finally {
      setBusy(false);
    }
  }

  function saveSecrets(event: Event) {
    event.preventDefault();
    const value = valueInput.current?.value ?? '';
    const named = secretName.trim();
    const set = named && value ? [{ name: named, value }] : [];
    const remove = removed.filter((secret) => secret !== named);
    if (set.length === 0 && remove.length === 0) {
      setError('Nothing to save: give a name and a value, or tick secrets to remove.');
      return;
    }
    if (valueInput.current) valueInput.current.value = '';
    setSecretName('');
    void save((ifMatch) => client.deployments.mergeSecrets(deploymentId, { set, remove }, { ifMatch }), 'Secrets saved: a new revision is deploying them.');
  }

  return (
    <section>
      <p class="crumbs">
        <a href={link('/deployments')}>Deployments</a> / <a href={link(`/deployments/${deploymentId}`)}>{name}</a> /
      </p>
      <h1>Settings of {name}</h1>
      {notice && (
        <p role="status" class="notice">
          {notice}
        </p>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <h2>Settings</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const body = { display_name: displayName.trim() || null, ...(codeHosted ? { source_config: { build_on_push: buildOnPush } } : {}) };
          void save((ifMatch) => client.deployments.update(deploymentId, body, { ifMatch }), 'Saved. No new revision: these settings change in place.');
        }}
      >
        <label>
          Display name <input value={displayName} disabled={!canWrite} onInput={(event) => setDisplayName(event.currentTarget.value)} />
        </label>
        {codeHosted && (
          <label>
            <input type="checkbox" checked={buildOnPush} disabled={!canWrite} onChange={(event) => setBuildOnPush(event.currentTarget.checked)} /> Build on push
          </label>
        )}
        {canWrite && (
          <button type="submit" disabled={busy}>
            Save
          </button>
        )}
      </form>
      {mayHavePreviews(deployment) && (
        <>
          <h2>Previews</h2>
          <p class="hint">
            A deployment of its own for each pull request or matching branch, with this deployment's configuration. Saved in place: no new revision.
          </p>
          <PreviewSettingsForm
            settings={deployment.previews}
            secretNames={loaded.secretNames}
            canWrite={canWrite}
            busy={busy}
            onSave={(previews) =>
              void save((ifMatch) => client.deployments.update(deploymentId, { previews }, { ifMatch }), 'Preview settings saved. No new revision.')
            }
          />
        </>
      )}
      {deployment.parent_deployment_id && (
        <p class="hint" data-testid="preview-settings-parent">
          This is a preview, made with its parent's configuration: previews are set on{' '}
          <a href={link(`/deployments/${deployment.parent_deployment_id}/settings`)}>the parent's settings</a>.
        </p>
      )}
      <h2>Secrets</h2>
      <p>Values are write-only: Berth never shows them again. Every change of secrets makes a new revision, so saving them deploys.</p>
      {loaded.secretNames.length === 0 ? (
        <p>No secrets.</p>
      ) : (
        <ul class="secrets" data-testid="secret-names">
          {loaded.secretNames.map((secret) => (
            <li key={secret}>
              <code>{secret}</code> <span class="masked">value hidden</span>
              {canWriteSecrets && (
                <label>
                  <input
                    type="checkbox"
                    checked={removed.includes(secret)}
                    onChange={(event) => setRemoved(event.currentTarget.checked ? [...removed, secret] : removed.filter((other) => other !== secret))}
                  />{' '}
                  Remove {secret}
                </label>
              )}
            </li>
          ))}
        </ul>
      )}
      {canWriteSecrets && (
        <form onSubmit={saveSecrets} autoComplete="off">
          <label>
            Secret name <input value={secretName} onInput={(event) => setSecretName(event.currentTarget.value)} />
          </label>
          <label>
            New value <input ref={valueInput} type="password" autoComplete="new-password" />
          </label>
          <button type="submit" disabled={busy}>
            Save secrets and deploy
          </button>
        </form>
      )}
    </section>
  );
}
