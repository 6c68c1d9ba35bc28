import type { RevisionStatus } from './revision-status.js';

/**
 * What Berth tells GitHub about a revision built from a commit (docs/webhooks.md, "Commit
 * statuses"): a commit status under the context `berth/<deployment name>`, and the status
 * of the GitHub deployment made for the revision.
 */
export interface CommitNotice {
  state: 'pending' | 'success' | 'failure' | 'error';
  deploymentState: 'queued' | 'in_progress' | 'success' | 'failure' | 'error';
  description: string;
}

/** GitHub refuses a longer commit status description. */
export const DESCRIPTION_LIMIT = 140;

/** The statuses GitHub hears about; every other move of a revision sends nothing. */
const NOTICES: Partial<Record<RevisionStatus, Omit<CommitNotice, 'description'> & { fallback: string }>> = {
  QUEUED: { state: 'pending', deploymentState: 'queued', fallback: 'Queued.' },
  BUILDING: { state: 'pending', deploymentState: 'in_progress', fallback: 'Building.' },
  DEPLOYED: { state: 'success', deploymentState: 'success', fallback: 'Deployed.' },
  CREATE_FAILED: { state: 'failure', deploymentState: 'failure', fallback: 'Failed.' },
  BUILD_FAILED: { state: 'failure', deploymentState: 'failure', fallback: 'Build failed.' },
  DEPLOY_FAILED: { state: 'failure', deploymentState: 'failure', fallback: 'Deploy failed.' },
  INTERRUPTED: { state: 'error', deploymentState: 'error', fallback: 'Interrupted.' },
  SKIPPED: { state: 'error', deploymentState: 'error', fallback: 'Skipped: a newer revision replaced it.' },
};

export function noticeWanted(status: RevisionStatus): boolean {
  return NOTICES[status] !== undefined;
}

export function commitNotice(status: RevisionStatus, message: string | null): CommitNotice | undefined {
  const notice = NOTICES[status];
  if (!notice) return undefined;
  return { state: notice.state, deploymentState: notice.deploymentState, description: describe(message ?? notice.fallback) };
}

/**
 * One line of at most 140 characters. Credentials written into a URL (`scheme://user:pass@`)
 * are cut out: a status message may quote a repository address, and a commit status is
 * public to everyone who can read the repository.
 */
export function describe(message: string): string {
  const line = message
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1')
    .replace(/\s+/g, ' ')
    .trim();
  return line.length <= DESCRIPTION_LIMIT ? line : `${line.slice(0, DESCRIPTION_LIMIT - 1)}…`;
}

/** The commit status's context: one per deployment, so several deployments of a repository each show their own. */
export function statusContext(deploymentName: string): string {
  return `berth/${deploymentName}`;
}

/** `owner` and `name` of a repository on GitHub (or a GitHub Enterprise Server) from its web or clone URL. */
export function gitHubRepository(url: string): { owner: string; name: string } | undefined {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return undefined;
  }
  const parts = path
    .replace(/\.git\/?$/, '')
    .split('/')
    .filter(Boolean);
  const [owner, name] = parts.slice(-2);
  return parts.length >= 2 && owner && name ? { owner, name } : undefined;
}
