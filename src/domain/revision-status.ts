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
export const TERMINAL_STATUSES: ReadonlySet<RevisionStatus> = new Set(['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED']);

export const IN_PROGRESS_STATUSES: ReadonlySet<RevisionStatus> = new Set(['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING']);

export function isRevisionStatus(value: string): value is RevisionStatus {
  return (REVISION_STATUSES as readonly string[]).includes(value);
}

export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status as RevisionStatus);
}

export function isInProgress(status: string): boolean {
  return IN_PROGRESS_STATUSES.has(status as RevisionStatus);
}

/**
 * Every status change the engine or the API may make. Image revisions skip the build
 * states; `SKIPPED` is for revisions that never started (a newer one won); `INTERRUPTED`
 * is by request and possible from any in-progress status.
 */
export const REVISION_TRANSITIONS: Readonly<Record<RevisionStatus, readonly RevisionStatus[]>> = {
  CREATING: ['QUEUED', 'CREATE_FAILED', 'SKIPPED', 'INTERRUPTED'],
  QUEUED: ['AWAITING_BUILD', 'AWAITING_DEPLOY', 'CREATE_FAILED', 'SKIPPED', 'INTERRUPTED'],
  AWAITING_BUILD: ['BUILDING', 'BUILD_FAILED', 'INTERRUPTED'],
  BUILDING: ['AWAITING_DEPLOY', 'BUILD_FAILED', 'INTERRUPTED'],
  // SKIPPED: handed to a listener that had not taken it up when a newer revision came.
  AWAITING_DEPLOY: ['DEPLOYING', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED'],
  DEPLOYING: ['DEPLOYED', 'DEPLOY_FAILED', 'INTERRUPTED'],
  DEPLOYED: [],
  CREATE_FAILED: [],
  BUILD_FAILED: [],
  DEPLOY_FAILED: [],
  SKIPPED: [],
  INTERRUPTED: [],
  UNKNOWN: [],
};

export function canTransition(from: string, to: RevisionStatus): boolean {
  return isRevisionStatus(from) && REVISION_TRANSITIONS[from].includes(to);
}

/** Not started yet: such a revision is skipped when a newer one is waiting too. */
export function isWaiting(status: string): boolean {
  return status === 'CREATING' || status === 'QUEUED';
}
