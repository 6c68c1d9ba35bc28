import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { describeError, type Session, signIn } from './session.js';

/**
 * Sign-in: the key is sent once to exchange it for a session and is not kept anywhere in
 * the browser (the field is cleared; the session lives in an HttpOnly cookie).
 */
export function SignIn({ onSignedIn, failure }: { onSignedIn(session: Session): void; failure: string | null }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(failure);
  const [busy, setBusy] = useState(false);
  const location = useLocation();

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await signIn(key.trim());
      setKey('');
      if (location.path === '/' || location.path === '/sign-in') location.route('/deployments', true);
      onSignedIn(session);
    } catch (caught) {
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" class="sign-in">
      <h1>Sign in to Berth</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
        />
        <p class="hint">
          The key is exchanged for a session and not kept by the browser. <code>npm start</code> prints where the admin key of a new Berth is.
        </p>
        <button type="submit" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}
