/** Revision statuses as real clients know them (see real-clients.md 5.1). */
export const REVISION_STATUSES = [
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'DEPLOYED',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'SKIPPED',
  'INTERRUPTED',
  'UNKNOWN',
] as const;

export type RevisionStatus = (typeof REVISION_STATUSES)[number];

/** Statuses a revision never leaves on its own. */
export const TERMINAL_STATUSES: ReadonlySet<RevisionStatus> = new Set([
  'DEPLOYED',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'SKIPPED',
  'INTERRUPTED',
]);

export const IN_PROGRESS_STATUSES: ReadonlySet<RevisionStatus> = new Set([
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
]);

export function isRevisionStatus(value: string): value is RevisionStatus {
  return (REVISION_STATUSES as readonly string[]).includes(value);
}

export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status as RevisionStatus);
}

export function isInProgress(status: string): boolean {
  return IN_PROGRESS_STATUSES.has(status as RevisionStatus);
}
