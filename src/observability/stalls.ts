import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * Stalls of the event loop, measured so that one synchronous stall is seen at its length.
 *
 * prom-client's `nodejs_eventloop_lag_*` gauges miss exactly that: Node's delay histogram
 * records the gap between two turns of its timer, and its `reset()` (called by every scrape)
 * forgets the previous turn, so the first gap after a scrape is never recorded. A stall that
 * ends just before a scrape (the scrape's request waited behind it) or begins just after one
 * vanishes: an 80 ms stall read as a max of 10 ms.
 *
 * Two sources here: the delay histogram at a fine resolution, read and reset per scrape, for
 * the percentiles (losing one sample a window does not move them); and a probe, an interval
 * timer whose turns are never forgotten, for the longest gap and the stall counts. A scrape
 * also counts as a turn of the probe, so a stall it waited behind belongs to its own window.
 */

/** The delay histogram's timer: ~1 % of a core on an idle server (1 ms cost ~3 %), measured. */
const RESOLUTION_MS = 2;
/** The probe's interval: a stall is counted by how late the probe turned, a lower bound of its length. */
const PROBE_MS = 10;
/** Thresholds of the stall counter; a request's tail target (25 ms) lies among them. */
const STALL_THRESHOLDS_MS = [25, 50, 100, 250] as const;
const QUANTILES = [50, 90, 99] as const;

/** Observes the event loop into `registry` for the rest of the process's life. */
export function observeEventLoopStalls(registry: Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();

  // The gauge that reads the window comes first: prom-client collects in registration order,
  // so the figures it sets (and the stall a scrape waited behind) show in this scrape.
  let longestGap = 0;
  const delay: Gauge<'quantile'> = new Gauge({
    name: 'berth_event_loop_delay_seconds',
    help: `Event-loop delay since the previous scrape by quantile: the gap between turns of a ${RESOLUTION_MS} ms timer (so at least ${RESOLUTION_MS} ms).`,
    labelNames: ['quantile'] as const,
    registers: [registry],
    collect() {
      turn();
      const empty = histogram.count === 0;
      for (const q of QUANTILES) delay.set({ quantile: String(q / 100) }, empty ? 0 : histogram.percentile(q) / 1e9);
      longest.set(Math.max(longestGap / 1000, empty ? 0 : histogram.max / 1e9));
      histogram.reset();
      longestGap = 0;
    },
  });
  const longest = new Gauge({
    name: 'berth_event_loop_delay_max_seconds',
    help: 'Longest the event loop went without turning since the previous scrape: at least as long as the longest stall in that time.',
    registers: [registry],
  });

  const stalls = new Counter({
    name: 'berth_event_loop_stalls_total',
    help: `Times the event loop was held at least this long (counted by how late a ${PROBE_MS} ms timer turned).`,
    labelNames: ['over'] as const,
    registers: [registry],
  });
  for (const ms of STALL_THRESHOLDS_MS) stalls.inc({ over: `${ms}ms` }, 0);

  let lastTurn = performance.now();
  const turn = () => {
    const now = performance.now();
    const gap = now - lastTurn;
    lastTurn = now;
    if (gap > longestGap) longestGap = gap;
    const late = gap - PROBE_MS;
    for (const ms of STALL_THRESHOLDS_MS) if (late >= ms) stalls.inc({ over: `${ms}ms` });
  };
  setInterval(turn, PROBE_MS).unref();
}
