/** How often an agent should send a heartbeat (told to it in the heartbeat answer). */
export const HEARTBEAT_INTERVAL_SECONDS = 10;
/** Silent this long, a listener shows OFFLINE. Every protocol call counts as being heard from. */
export const OFFLINE_AFTER_SECONDS = 30;

/** ONLINE when the listener's agent was heard from within OFFLINE_AFTER_SECONDS. */
export function listenerStatus(lastSeenAt: string | null, now: number = Date.now()): 'ONLINE' | 'OFFLINE' {
  if (lastSeenAt === null) return 'OFFLINE';
  return now - Date.parse(lastSeenAt) <= OFFLINE_AFTER_SECONDS * 1000 ? 'ONLINE' : 'OFFLINE';
}
