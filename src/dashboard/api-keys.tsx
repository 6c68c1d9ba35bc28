import { useCallback, useEffect, useState } from 'preact/hooks';
import { BerthApiError, type Schemas } from '../client/index.js';
import { useWorkplace } from './context.js';
import { formatTime } from './format.js';
import { describeError, may } from './session.js';

type Role = Schemas['ApiKeyCreate']['role'];
const ROLES: Role[] = ['admin', 'member', 'read_only', 'deployer'];

/** The workspace's API keys: create one with a role (shown once, with a copy button) and revoke. */
export function ApiKeysPage() {
  const { session, client, workspaceId, signedOut } = useWorkplace();
  const [keys, setKeys] = useState<Schemas['ApiKey'][] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('read_only');
  const [deploymentIds, setDeploymentIds] = useState('');
  const [busy, setBusy] = useState(false);
  const canCreate = may(session, 'POST /v1/api-keys');
  const canRevoke = may(session, 'DELETE /v1/api-keys/{key_id}');

  const load = useCallback(async () => {
    try {
      const all = await client.apiKeys.list();
      setKeys(all.filter((key) => key.workspace_id === workspaceId || key.workspace_id === null));
    } catch (caught) {
      if (caught instanceof BerthApiError && caught.status === 401) return signedOut();
      setError(describeError(caught));
    }
  }, [client, workspaceId, signedOut]);
  useEffect(() => {
    if (may(session, 'GET /v1/api-keys')) void load();
  }, [load, session]);

  if (!may(session, 'GET /v1/api-keys')) {
    return (
      <section>
        <h1>API keys</h1>
        <p>This key's role may not see API keys.</p>
      </section>
    );
  }

  async function act(action: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await action();
      await load();
    } catch (caught) {
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section>
      <h1>API keys</h1>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {created && (
        <div class="created-key" data-testid="created-key" role="status">
          <p>
            The key <strong>{created.name}</strong>, shown this once: copy it now, Berth keeps only its digest.
          </p>
          <code data-testid="new-key">{created.key}</code>{' '}
          <button
            type="button"
            onClick={() =>
              navigator.clipboard.writeText(created.key).then(
                () => setCopied(true),
                () => setCopied(false),
              )
            }
          >
            {copied ? 'Copied' : 'Copy key'}
          </button>{' '}
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      {canCreate && (
        <form
          class="new-key"
          onSubmit={(event) => {
            event.preventDefault();
            void act(async () => {
              const ids = deploymentIds
                .split(/[\s,]+/)
                .map((id) => id.trim())
                .filter(Boolean);
              const made = await client.apiKeys.create({
                name: name.trim(),
                role,
                workspace_id: workspaceId ?? null,
                ...(role === 'deployer' ? { deployment_ids: ids } : {}),
              });
              setCopied(false);
              setCreated({ name: made.name, key: made.key });
              setName('');
            });
          }}
        >
          <h2>New key</h2>
          <label>
            Key name <input value={name} required onInput={(event) => setName(event.currentTarget.value)} />
          </label>
          <label>
            Role{' '}
            <select value={role} onChange={(event) => setRole(event.currentTarget.value as Role)}>
              {ROLES.map((choice) => (
                <option key={choice} value={choice}>
                  {choice.replace('_', '-')}
                </option>
              ))}
            </select>
          </label>
          {role === 'deployer' && (
            <label>
              Deployment ids <input value={deploymentIds} required onInput={(event) => setDeploymentIds(event.currentTarget.value)} />
            </label>
          )}
          <button type="submit" disabled={busy}>
            Create key
          </button>
        </form>
      )}
      {keys === null ? (
        <p class="loading">Loading…</p>
      ) : (
        <table class="keys">
          <caption>Keys of this workspace</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Ends with</th>
              <th scope="col">Created</th>
              {canRevoke && <th scope="col">Revoke</th>}
            </tr>
          </thead>
          <tbody>
            {keys.map((key) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td>
                  {key.role.replace('_', '-')}
                  {key.deployment_ids.length > 0 && ` (${key.deployment_ids.length} deployments)`}
                </td>
                <td>
                  <code>{key.key_hint}</code>
                </td>
                <td>{formatTime(key.created_at)}</td>
                {canRevoke && (
                  <td>
                    {key.id !== session.key.id && (
                      <button
                        type="button"
                        class="danger"
                        disabled={busy}
                        onClick={() => {
                          if (window.confirm(`Revoke the key ${key.name}? Everything using it stops working.`))
                            void act(async () => void (await client.apiKeys.revoke(key.id)));
                        }}
                      >
                        Revoke {key.name}
                      </button>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
