import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Garbage-collection pauses, so a stall of the event loop (prom-client's
 * `nodejs_eventloop_lag_*` gauges beside these) can be told apart from a collection.
 *
 * prom-client has `nodejs_gc_duration_seconds` too, but its observer records only the first
 * entry of each batch Node delivers, and under load collections come in batches; its
 * buckets also jump from 10 ms to 100 ms, right where a request's tail lives.
 */
const PAUSE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

const KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/** Observes collections into `registry` for the rest of the process's life. */
export function observeGcPauses(registry: Registry): void {
  const pauses = new Histogram({
    name: 'berth_gc_pause_seconds',
    help: 'Garbage-collection pauses of the main thread by kind (minor: scavenge of the young generation; major: mark-compact).',
    labelNames: ['kind'] as const,
    buckets: PAUSE_BUCKETS,
    registers: [registry],
  });
  let longest = 0;
  new Gauge({
    name: 'berth_gc_pause_max_seconds',
    help: 'Longest garbage-collection pause since the previous scrape (reset by each scrape, as nodejs_eventloop_lag_max_seconds is).',
    registers: [registry],
    collect() {
      this.set(longest);
      longest = 0;
    },
  });
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const seconds = entry.duration / 1000;
      pauses.observe({ kind: KINDS[kindOf(entry)] ?? 'other' }, seconds);
      if (seconds > longest) longest = seconds;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
}

function kindOf(entry: PerformanceEntry): number {
  // Node's GC entries carry their kind in `detail`, which the DOM-shaped type leaves out.
  return (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1;
}
