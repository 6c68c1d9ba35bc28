import { createHash } from 'node:crypto';
import { fail } from './errors.js';
import type { Secret } from './secrets.js';

/**
 * Preview deployments (issue 23, item 4; docs/previews.md): a deployment's settings for the
 * previews Berth makes of its pull requests (`github`) or branches (`git`), and the rules
 * that decide, for each event, whether a preview is made, updated, removed or refused.
 */
export interface PreviewSettings {
  enabled: boolean;
  /** `all` pull requests, or only those carrying `label`. */
  trigger: 'all' | 'label';
  label: string | null;
  /** A preview with no new commit for this long is removed. */
  idle_minutes: number;
  /** Live previews of one deployment at once; the next pull request is refused with a commit status. */
  max_previews: number;
  /** The parent's secrets previews get, by name; none by default. */
  secret_names: string[];
  /** `git` integrations: branches whose name matches get a preview (`*` within a path segment, `**` across). */
  branch_pattern: string | null;
  /** Pull requests from forks get previews (never secrets) only when this and BERTH_PREVIEWS_ALLOW_FORKS are on. */
  allow_forks: boolean;
}

export const DEFAULT_PREVIEW_SETTINGS: PreviewSettings = {
  enabled: false,
  trigger: 'all',
  label: null,
  idle_minutes: 1440,
  max_previews: 5,
  secret_names: [],
  branch_pattern: null,
  allow_forks: false,
};

/** What a preview was made for: a pull request of a `github` repository, or a branch of a `git` one. */
export type PreviewOrigin =
  { kind: 'pull_request'; number: number; head_ref: string; head_sha: string; fork: boolean } | { kind: 'branch'; branch: string; head_sha: string };

/** One key per pull request or branch of a parent: the database keeps one preview per key. */
export function previewKey(origin: PreviewOrigin): string {
  return origin.kind === 'pull_request' ? `pr:${origin.number}` : `branch:${origin.branch}`;
}

/** `previews` in a PATCH: every field optional, null meaning "as it is" (or "none" for `label` and `branch_pattern`). */
export type PreviewSettingsInput = { [K in keyof PreviewSettings]?: PreviewSettings[K] | null };

/** Settings after a PATCH: given fields replace, the others stay; checked as a whole. */
export function mergePreviewSettings(current: PreviewSettings | null, patch: PreviewSettingsInput): PreviewSettings {
  const merged: PreviewSettings = { ...(current ?? DEFAULT_PREVIEW_SETTINGS) };
  for (const [field, value] of Object.entries(patch) as [keyof PreviewSettings, unknown][]) {
    // `label` and `branch_pattern` may be cleared with null; null elsewhere leaves the field as is.
    if (value === undefined || (value === null && field !== 'label' && field !== 'branch_pattern')) continue;
    (merged as unknown as Record<string, unknown>)[field] = value;
  }
  merged.secret_names = [...new Set(merged.secret_names)].sort();
  if (merged.trigger === 'label' && !merged.label) {
    throw fail('previews_invalid', "Preview settings: trigger 'label' needs a 'label' to look for.");
  }
  return merged;
}

/** Previews are of pull requests and branches: only a deployment built from a repository, and not itself a preview, has them. */
export function refuseUnpreviewable(deployment: { isPreview: boolean; fromRepository: boolean }, settings: PreviewSettings): void {
  if (deployment.isPreview) throw fail('previews_invalid', 'Preview settings: a preview deployment cannot have previews of its own; set them on its parent.');
  if (settings.enabled && !deployment.fromRepository) {
    throw fail('previews_invalid', 'Preview settings: only a deployment built from a repository (source github or codehost) can have previews.');
  }
}

/** The secrets a preview gets: only those named, and none at all for a pull request from a fork. */
export function previewSecrets(parentSecrets: readonly Secret[], settings: PreviewSettings, origin: PreviewOrigin): Secret[] {
  if (origin.kind === 'pull_request' && origin.fork) return [];
  const wanted = new Set(settings.secret_names);
  return parentSecrets.filter((secret) => wanted.has(secret.name));
}

export interface PullRequestEvent {
  action: string;
  number: number;
  headSha: string;
  headRef: string;
  fork: boolean;
  labels: string[];
}

export type PullRequestDecision =
  | { kind: 'upsert' }
  /** `why` is the audit row's reason and the `preview.deleted` event's. */
  | { kind: 'remove'; why: string }
  | { kind: 'ignore'; why: string }
  /** A preview the settings would allow, refused; `why` goes to the commit status. */
  | { kind: 'refuse'; why: string };

const UPSERT_ACTIONS = new Set(['opened', 'synchronize', 'reopened', 'labeled']);

/**
 * What a pull request event asks of a parent's previews. `exists` says whether a live
 * preview of this pull request is there; `live` counts the parent's live previews.
 *
 * With trigger `label`, the label is the switch: the preview goes when its pull request no
 * longer carries it (`unlabeled`), as when the pull request closes, and even with previews
 * turned off since (they make no new ones, but a preview nobody wants still goes). Another
 * label removed, or any label with trigger `all`, changes nothing.
 */
export function decidePullRequest(
  settings: PreviewSettings | null,
  event: PullRequestEvent,
  context: { exists: boolean; live: number; operatorAllowsForks: boolean },
): PullRequestDecision {
  const noPreview: PullRequestDecision = { kind: 'ignore', why: 'no preview to remove' };
  if (event.action === 'closed') return context.exists ? { kind: 'remove', why: `pull request #${event.number} was closed` } : noPreview;
  if (event.action === 'unlabeled') {
    if (settings?.trigger !== 'label' || settings.label === null || event.labels.includes(settings.label)) {
      return { kind: 'ignore', why: 'the pull request still qualifies for a preview' };
    }
    return context.exists ? { kind: 'remove', why: `label '${settings.label}' was removed from pull request #${event.number}` } : noPreview;
  }
  if (!settings?.enabled) return { kind: 'ignore', why: 'previews are off' };
  if (!UPSERT_ACTIONS.has(event.action)) return { kind: 'ignore', why: `action '${event.action}' changes no preview` };
  if (settings.trigger === 'label' && !(settings.label !== null && event.labels.includes(settings.label))) {
    return { kind: 'ignore', why: `the pull request has no label '${settings.label}'` };
  }
  if (event.fork && !(context.operatorAllowsForks && settings.allow_forks)) {
    return { kind: 'refuse', why: 'No preview: pull requests from forks get none here.' };
  }
  if (!context.exists && context.live >= settings.max_previews) {
    return { kind: 'refuse', why: `No preview: this deployment already has ${context.live} previews, its maximum (max_previews).` };
  }
  return { kind: 'upsert' };
}

/**
 * Whether a branch name matches a pattern: `*` stands for any characters but `/`, `**` for
 * any characters, everything else for itself.
 */
export function branchMatches(pattern: string, branch: string): boolean {
  const source = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  return new RegExp(`^${source}$`).test(branch);
}

/** Whether a preview last active at `activeAt` is past its idle time at `now`. */
export function isIdle(activeAt: string, idleMinutes: number, now: number): boolean {
  return now - Date.parse(activeAt) > idleMinutes * 60_000;
}

const NAME_LIMIT = 63;

/**
 * A preview's name: the parent's with `-pr-<n>` or `-br-<branch>`, cut to the 63 characters
 * a name may have, with a short digest of the origin when cut (or when `salted`, after a
 * clash with a name already taken) so that two previews never share one.
 */
export function previewName(parentName: string, origin: PreviewOrigin, salted = false): string {
  const tail =
    origin.kind === 'pull_request'
      ? `pr-${origin.number}`
      : `br-${origin.branch
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-+|-+$/g, '')}`;
  const plain = `${parentName}-${tail}`.replace(/-+$/, '');
  if (plain.length <= NAME_LIMIT && !salted) return plain;
  const digest = createHash('sha256')
    .update(`${parentName}\0${previewKey(origin)}`)
    .digest('hex')
    .slice(0, 8);
  return `${plain.slice(0, NAME_LIMIT - digest.length - 1).replace(/-+$/, '')}-${digest}`;
}
