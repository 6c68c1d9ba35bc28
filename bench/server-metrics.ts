/**
 * What the server's own /metrics says about one measured window: the event loop's delay
 * (Berth's berth_event_loop_* figures, src/observability/stalls.ts, cover the time since the
 * previous scrape, so a scrape just before the window starts it; a server without them is read
 * through prom-client's nodejs_eventloop_lag_*, which miss a stall next to a scrape) and the
 * stalls counted within it and the garbage-collection pauses within it (berth_gc_pause_seconds,
 * a cumulative histogram: the window is the difference of two scrapes). A server that
 * predates a figure leaves it undefined, so older trees can be measured for comparison.
 */

export interface PauseFigures {
  /** Event-loop delay over the window, milliseconds. */
  loopP50?: number;
  loopP99?: number;
  loopMax?: number;
  /** Which figures the loop's come from: Berth's monitor, or prom-client's on an older server. */
  loopSource?: 'berth' | 'prom-client';
  /** Stalls of the loop within the window by threshold in ms (berth_event_loop_stalls_total), e.g. { 25: 3, 50: 1, 100: 0 }. */
  stalls?: Record<string, number>;
  /** Collections within the window: how many, their total and longest pause (ms), how many were mark-compacts. */
  gcCount?: number;
  gcTotalMs?: number;
  gcMaxMs?: number;
  gcMajor?: number;
  /** Old generation in use at the end of the window, MB. */
  oldSpaceMb?: number;
}

type Samples = Map<string, number>;

function parse(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

async function scrape(url: string): Promise<Samples> {
  const response = await fetch(`${url}/metrics`);
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}`);
  return parse(await response.text());
}

const seconds = (value: number | undefined) => (value === undefined ? undefined : value * 1000);

function sumOf(samples: Samples, prefix: string, label?: string): number | undefined {
  let total: number | undefined;
  for (const [key, value] of samples) {
    if (key.startsWith(prefix) && (label === undefined || key.includes(label))) total = (total ?? 0) + value;
  }
  return total;
}

/** Starts a window; its `end()` answers the window's figures. */
export async function pauseWindow(url: string): Promise<{ end(): Promise<PauseFigures> }> {
  const before = await scrape(url);
  return {
    async end() {
      const after = await scrape(url);
      const diff = (prefix: string, label?: string) => {
        const a = sumOf(after, prefix, label);
        const b = sumOf(before, prefix, label);
        return a === undefined ? undefined : a - (b ?? 0);
      };
      const gcTotal = diff('berth_gc_pause_seconds_sum');
      const berth = after.has('berth_event_loop_delay_max_seconds');
      const loop = berth
        ? {
            loopP50: seconds(after.get('berth_event_loop_delay_seconds{quantile="0.5"}')),
            loopP99: seconds(after.get('berth_event_loop_delay_seconds{quantile="0.99"}')),
            loopMax: seconds(after.get('berth_event_loop_delay_max_seconds')),
            loopSource: 'berth' as const,
            stalls: Object.fromEntries([25, 50, 100].map((ms) => [String(ms), diff(`berth_event_loop_stalls_total{over="${ms}ms"}`) ?? 0])),
          }
        : {
            loopP50: seconds(after.get('nodejs_eventloop_lag_p50_seconds')),
            loopP99: seconds(after.get('nodejs_eventloop_lag_p99_seconds')),
            loopMax: seconds(after.get('nodejs_eventloop_lag_max_seconds')),
            loopSource: 'prom-client' as const,
          };
      return {
        ...loop,
        gcCount: diff('berth_gc_pause_seconds_count'),
        gcTotalMs: seconds(gcTotal),
        gcMaxMs: seconds(after.get('berth_gc_pause_max_seconds')),
        gcMajor: diff('berth_gc_pause_seconds_count', 'kind="major"'),
        oldSpaceMb: ((v) => (v === undefined ? undefined : v / 2 ** 20))(after.get('nodejs_heap_space_size_used_bytes{space="old"}')),
      };
    },
  };
}
