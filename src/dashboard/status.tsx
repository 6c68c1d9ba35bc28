/** Statuses a deployment can be in, for the list's filter. */
export const DEPLOYMENT_STATUSES = ['READY', 'AWAITING_DATABASE', 'AWAITING_DELETE', 'UNUSED', 'UNKNOWN'] as const;

const FAILED = new Set(['CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED']);
const GOOD = new Set(['DEPLOYED', 'READY']);
const STOPPED = new Set(['INTERRUPTED', 'SKIPPED', 'UNUSED', 'AWAITING_DELETE']);

/** A status as a badge: its words, and a class for its colour (never colour alone). */
export function StatusBadge({ status }: { status: string }) {
  const tone = FAILED.has(status) ? 'failed' : GOOD.has(status) ? 'good' : STOPPED.has(status) ? 'stopped' : 'busy';
  return <span class={`status status-${tone}`}>{status.replaceAll('_', ' ').toLowerCase()}</span>;
}
