/**
 * How long an agent may go without any call before it sends a heartbeat (told to it in the
 * heartbeat answer). Every protocol call counts as being heard from, and an agent's long
 * poll (at most MAX_STATE_WAIT_SECONDS) starts a call more often than this, so a polling
 * agent needs no heartbeats of its own: a thousand idle agents cost their polls only.
 */
export const HEARTBEAT_INTERVAL_SECONDS = 60;
/** Silent this long, a listener shows OFFLINE: longer than the longest wait of a long poll, with room for a retry. */
export const OFFLINE_AFTER_SECONDS = 90;

/** ONLINE when the listener's agent was heard from within OFFLINE_AFTER_SECONDS. */
export function listenerStatus(lastSeenAt: string | null, now: number = Date.now()): 'ONLINE' | 'OFFLINE' {
  if (lastSeenAt === null) return 'OFFLINE';
  return now - Date.parse(lastSeenAt) <= OFFLINE_AFTER_SECONDS * 1000 ? 'ONLINE' : 'OFFLINE';
}
