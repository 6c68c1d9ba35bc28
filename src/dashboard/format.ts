/** A moment as a person reads it, in their own time zone. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** A duration in the largest units that matter: `850 ms`, `12.4 s`, `3 min 5 s`, `2 h 4 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** The first characters of an id: enough to tell revisions apart on screen. */
export const shortId = (id: string | null | undefined) => (id ? id.slice(0, 8) : '—');
