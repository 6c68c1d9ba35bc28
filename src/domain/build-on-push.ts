import { IN_PROGRESS_STATUSES, type RevisionStatus } from './revision-status.js';

/**
 * Revisions a deployment runs or is on its way to running: in progress, or DEPLOYED.
 * Failed, skipped and interrupted ones are not: pushing their commit again builds again.
 */
export const LIVE_REVISION_STATUSES: readonly RevisionStatus[] = [...IN_PROGRESS_STATUSES, 'DEPLOYED'];

const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i;

/** The commit a push or a poll names, lower-case; null unless it is a full sha (SHA-1 or SHA-256). */
export function pushedCommit(sha: string): string | null {
  return FULL_SHA.test(sha) ? sha.toLowerCase() : null;
}

/**
 * Whether a push of `commit` is already built, building or queued for a deployment, so
 * that it makes no new revision. The deployment's newest live revision tells where the
 * deployment is heading; it names a commit through `repo_commit_sha`: the commit it was
 * built from, or, for a build on push not built yet, the commit whose push made it.
 *
 * Only the newest live revision counts, not any revision of that commit: after a
 * force-push back to a commit deployed earlier, the deployment should follow the branch.
 */
export function alreadyHeadingTo(newestLive: { source_revision_config: { repo_commit_sha: string | null } } | undefined, commit: string): boolean {
  const named = newestLive?.source_revision_config.repo_commit_sha;
  return named != null && named.toLowerCase() === commit.toLowerCase();
}
