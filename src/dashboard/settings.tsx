import { useRoute } from 'preact-iso';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { BerthApiError, type Deployment, type Schemas } from '../client/index.js';
import { useWorkplace } from './context.js';
import { describeError, may } from './session.js';

type Secret = Schemas['Secret'];

/** What the page holds of the deployment: no secret value is ever in state that renders. */
interface Loaded {
  deployment: Omit<Deployment, 'secrets'>;
  secretNames: string[];
  etag: string | undefined;
}

/**
 * A deployment's settings and secrets. Names are shown, values are write-only. Settings that
 * change in place (display name, build on push) are saved without a revision; every change of
 * secrets makes a new revision (the API's rule), so secrets have only "save and deploy".
 * Writes carry If-Match: someone else's change in between is a 412, told and reloaded.
 */
export function SettingsPage() {
  const { session, client, link, signedOut } = useWorkplace();
  const { params } = useRoute();
  const deploymentId = params.deploymentId!;
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  // The current values, kept out of rendering: a PATCH replaces the whole set, so the others go back as they were.
  const secrets = useRef<Secret[]>([]);
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
      secrets.current = current;
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
  const codeHosted = deployment.source_config.repo_url !== null;

  async function save(body: Schemas['DeploymentUpdate'], done: string) {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      await client.deployments.update(deploymentId, body, { ifMatch: loaded!.etag });
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
    const kept = secrets.current.filter((secret) => secret.name !== named && !removed.includes(secret.name));
    const next = named && value ? [...kept, { name: named, value }] : kept;
    if (next.length === 0) {
      setError('A deployment keeps at least one secret once it has some: the API reads an empty list as "no change".');
      return;
    }
    if (valueInput.current) valueInput.current.value = '';
    setSecretName('');
    void save({ secrets: next }, 'Secrets saved: a new revision is deploying them.');
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
          void save(
            { display_name: displayName.trim() || null, ...(codeHosted ? { source_config: { build_on_push: buildOnPush } } : {}) },
            'Saved. No new revision: these settings change in place.',
          );
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
      <h2>Secrets</h2>
      <p>Values are write-only: Berth never shows them again. Every change of secrets makes a new revision, so saving them deploys.</p>
      {loaded.secretNames.length === 0 ? (
        <p>No secrets.</p>
      ) : (
        <ul class="secrets" data-testid="secret-names">
          {loaded.secretNames.map((secret) => (
            <li key={secret}>
              <code>{secret}</code> <span class="masked">value hidden</span>
              {canWrite && (
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
      {canWrite && (
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
