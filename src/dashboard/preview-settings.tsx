import { useEffect, useState } from 'preact/hooks';
import type { Schemas } from '../client/index.js';

type PreviewSettings = Schemas['PreviewSettings'];

interface Props {
  settings: PreviewSettings;
  /** The parent's secret names: those previews may be given. */
  secretNames: string[];
  canWrite: boolean;
  busy: boolean;
  onSave(previews: Schemas['PreviewSettingsUpdate']): void;
}

/**
 * A parent's preview settings (docs/previews.md). They change in place (no revision). The
 * form sends every field, so what is saved is what is shown; the API's rules (a label for
 * trigger `label`, the bounds) are its own, and its 400 is shown as it says it.
 */
export function PreviewSettingsForm({ settings, secretNames, canWrite, busy, onSave }: Props) {
  const [draft, setDraft] = useState(settings);
  useEffect(() => setDraft(settings), [settings]);
  const set = <K extends keyof PreviewSettings>(field: K, value: PreviewSettings[K]) => setDraft((current) => ({ ...current, [field]: value }));

  if (!canWrite) return <PreviewSettingsFacts settings={settings} />;
  // Names previews get that the parent no longer has stay listed, so they can be seen and taken off.
  const offered = [...new Set([...secretNames, ...draft.secret_names])];
  return (
    <form
      class="preview-settings"
      onSubmit={(event) => {
        event.preventDefault();
        onSave({ ...draft, label: draft.label?.trim() || null, branch_pattern: draft.branch_pattern?.trim() || null });
      }}
    >
      <label>
        <input type="checkbox" checked={draft.enabled} onChange={(event) => set('enabled', event.currentTarget.checked)} /> Previews on
      </label>
      <label>
        Trigger{' '}
        <select value={draft.trigger} onChange={(event) => set('trigger', event.currentTarget.value as PreviewSettings['trigger'])}>
          <option value="all">every pull request</option>
          <option value="label">pull requests with a label</option>
        </select>
      </label>
      <label>
        Label <input value={draft.label ?? ''} disabled={draft.trigger !== 'label'} onInput={(event) => set('label', event.currentTarget.value)} />
      </label>
      <label>
        Idle minutes before removal{' '}
        <input type="number" min={1} required value={draft.idle_minutes} onInput={(event) => set('idle_minutes', event.currentTarget.valueAsNumber)} />
      </label>
      <label>
        Previews at most{' '}
        <input type="number" min={1} required value={draft.max_previews} onInput={(event) => set('max_previews', event.currentTarget.valueAsNumber)} />
      </label>
      <fieldset>
        <legend>Secrets previews get</legend>
        {offered.length === 0 && <p class="hint">This deployment has no secrets.</p>}
        {offered.map((name) => (
          <label key={name}>
            <input
              type="checkbox"
              checked={draft.secret_names.includes(name)}
              onChange={(event) =>
                set('secret_names', event.currentTarget.checked ? [...draft.secret_names, name] : draft.secret_names.filter((other) => other !== name))
              }
            />{' '}
            Give previews {name}
          </label>
        ))}
      </fieldset>
      <label>
        Branch pattern (git integrations){' '}
        <input value={draft.branch_pattern ?? ''} placeholder="preview/*" onInput={(event) => set('branch_pattern', event.currentTarget.value)} />
      </label>
      <label>
        <input type="checkbox" checked={draft.allow_forks} onChange={(event) => set('allow_forks', event.currentTarget.checked)} /> Pull requests from forks
        (never with secrets; the operator must also allow them)
      </label>
      <button type="submit" disabled={busy}>
        Save previews
      </button>
    </form>
  );
}

/** The settings as read by a key that may not change them: text, no controls. */
function PreviewSettingsFacts({ settings }: { settings: PreviewSettings }) {
  return (
    <dl class="facts" data-testid="preview-settings">
      <dt>Previews</dt>
      <dd>{settings.enabled ? 'on' : 'off'}</dd>
      <dt>Trigger</dt>
      <dd>{settings.trigger === 'label' ? `pull requests labelled ${settings.label ?? ''}` : 'every pull request'}</dd>
      <dt>Idle minutes before removal</dt>
      <dd>{settings.idle_minutes}</dd>
      <dt>Previews at most</dt>
      <dd>{settings.max_previews}</dd>
      <dt>Secrets previews get</dt>
      <dd>{settings.secret_names.length > 0 ? settings.secret_names.join(', ') : 'none'}</dd>
      <dt>Branch pattern</dt>
      <dd>{settings.branch_pattern ?? '—'}</dd>
      <dt>Pull requests from forks</dt>
      <dd>{settings.allow_forks ? 'allowed' : 'not allowed'}</dd>
    </dl>
  );
}
