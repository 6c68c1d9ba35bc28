import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { observeGcPauses } from './pauses.js';
import { observeEventLoopStalls } from './stalls.js';

/**
 * Metrics of this process as a whole: Node's own (CPU, memory, event loop lag, GC) and the
 * engine's, which the engine reports through the functions below wherever it runs (inside
 * the server or as `berth engine`). Figures read from the database on scrape live beside
 * each endpoint instead (database-metrics.ts), since a process may serve several.
 */
export const processRegistry = new Registry();

let collectingDefaults = false;

/** prom-client's own delay histogram: coarse, since berth_event_loop_* (stalls.ts) are the figures to read. */
const EVENT_LOOP_RESOLUTION_MS = 10;

/**
 * The process registry, with Node's own figures from the first call on: a CLI command
 * that serves no metrics never starts the event loop and GC observers.
 */
export function processMetrics(): Registry {
  if (!collectingDefaults) {
    collectingDefaults = true;
    // prom-client's nodejs_eventloop_lag_* stay for dashboards that read them, but they miss a
    // stall next to a scrape (stalls.ts): berth_event_loop_* are the figures to read.
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: EVENT_LOOP_RESOLUTION_MS });
    observeEventLoopStalls(processRegistry);
    observeGcPauses(processRegistry);
  }
  return processRegistry;
}

/** How an engine step ended: its step-run outcome (engine_step_runs.outcome). */
export type StepOutcome = 'succeeded' | 'failed' | 'timeout' | 'shutdown' | 'lease-lost' | 'interrupted' | 'deleting';

// Builds take minutes and deploys wait for health checks: buckets up to half an hour.
const STEP_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800];

const stepDuration = new Histogram({
  name: 'berth_engine_step_duration_seconds',
  help: 'Duration of engine steps (build, deploy) by outcome.',
  labelNames: ['step', 'outcome'] as const,
  buckets: STEP_BUCKETS,
  registers: [processRegistry],
});

const builds = new Counter({
  name: 'berth_builds_total',
  help: 'Image builds run by this process, by outcome.',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});

const busySlots = new Gauge({
  name: 'berth_engine_busy_slots',
  help: 'Deployments this process is working on now.',
  registers: [processRegistry],
});

const slots = new Gauge({
  name: 'berth_engine_slots',
  help: 'Deployments this process works on at most at once (BERTH_ENGINE_CONCURRENCY); 0 without an engine.',
  registers: [processRegistry],
});

/** Called by the engine when a build or deploy step ends, however it ends. */
export function observeStep(step: 'build' | 'deploy' | 'database', outcome: StepOutcome, seconds: number): void {
  stepDuration.observe({ step, outcome }, seconds);
  if (step === 'build') builds.inc({ outcome });
}

/** Called by the engine when it starts or ends work on a deployment. */
export function setEngineSlots(busy: number, concurrency: number): void {
  busySlots.set(busy);
  slots.set(concurrency);
}

/** When each listener last reported to this Berth. */
export interface ListenerSighting {
  listenerId: string;
  lastSeenAt: Date;
}
export type ListenerSightingsReader = () => Promise<readonly ListenerSighting[]>;

let readListenerSightings: ListenerSightingsReader | undefined;

/** Gives the listener gauges their source (the server sets it to the listeners' last_seen_at). */
export function setListenerSightingsReader(reader: ListenerSightingsReader | undefined): void {
  readListenerSightings = reader;
}

/** Scrapes within this long share one read of the sightings (the gauges below all need it). */
const SIGHTINGS_TTL_MS = 1000;
let sightings: { at: number; reader: ListenerSightingsReader; read: Promise<readonly ListenerSighting[] | undefined> } | undefined;

/** Ages in seconds, one per listener; undefined without a reader or when the database cannot answer now. */
async function listenerAges(): Promise<{ listenerId: string; age: number }[] | undefined> {
  const reader = readListenerSightings;
  if (!reader) return undefined;
  if (!sightings || sightings.reader !== reader || Date.now() - sightings.at >= SIGHTINGS_TTL_MS) {
    // A database that cannot answer now costs these gauges their samples, not the whole scrape.
    sightings = { at: Date.now(), reader, read: reader().catch(() => undefined) };
  }
  const read = await sightings.read;
  const now = Date.now();
  return read?.map((s) => ({ listenerId: s.listenerId, age: Math.max(0, (now - s.lastSeenAt.getTime()) / 1000) }));
}

// Anonymous scrapes see listeners only in aggregate: their ids belong to tenants.
new Gauge({
  name: 'berth_listeners',
  help: 'Listeners that have reported to this Berth.',
  registers: [processRegistry],
  async collect() {
    const ages = await listenerAges();
    // remove(), not reset(): a reset gauge without labels reports 0, which would claim there are none.
    if (ages) this.set(ages.length);
    else this.remove();
  },
});

new Gauge({
  name: 'berth_listener_last_seen_max_age_seconds',
  help: 'Seconds since the listener silent the longest last reported (each listener apart with BERTH_METRICS_TOKEN).',
  registers: [processRegistry],
  async collect() {
    const ages = await listenerAges();
    if (ages && ages.length > 0) this.set(Math.max(...ages.map((a) => a.age)));
    else this.remove();
  },
});

/**
 * Figures that name tenants (listener ids; workspaces, deployments and their names belong
 * here too), served only to scrapes that present BERTH_METRICS_TOKEN: without a token
 * `/metrics` is open to anyone who reaches it, so it names no tenant.
 */
export const tenantRegistry = new Registry();

new Gauge({
  name: 'berth_listener_last_seen_age_seconds',
  help: 'Seconds since each listener last reported.',
  labelNames: ['listener_id'] as const,
  registers: [tenantRegistry],
  async collect() {
    this.reset();
    for (const { listenerId, age } of (await listenerAges()) ?? []) this.set({ listener_id: listenerId }, age);
  },
});
