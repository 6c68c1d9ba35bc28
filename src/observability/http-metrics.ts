import type { FastifyInstance } from 'fastify';
import { Histogram, Registry } from 'prom-client';
import { registerDatabaseMetrics, type RevisionCounts } from './database-metrics.js';
import { METRICS_UNAUTHORIZED, MetricsEndpoint } from './metrics-endpoint.js';
import { processMetrics, tenantRegistry } from './metrics.js';

export interface HttpMetricsOptions {
  /** BERTH_METRICS_TOKEN: required as a bearer token on GET /metrics when set. */
  token?: string;
  /** Source of the revision gauges; without it they are left out. */
  revisionCounts?: () => Promise<RevisionCounts>;
}

// From a cached GET (about a millisecond) to a long wait_for_terminal or event stream.
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];

/** Requests that matched no route share one label value, so scanners cannot add series. */
const UNMATCHED = 'unmatched';

/**
 * GET /metrics on this app, and request durations by route pattern and status. Call on
 * the root instance before routes are registered, so the hook sees every route.
 */
export function installMetrics(app: FastifyInstance, options: HttpMetricsOptions = {}): void {
  const registry = new Registry();
  const duration = new Histogram({
    name: 'berth_http_request_duration_seconds',
    help: 'HTTP request durations by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  if (options.revisionCounts) registerDatabaseMetrics(registry, options.revisionCounts);
  const endpoint = new MetricsEndpoint([processMetrics(), registry], options.token, [tenantRegistry]);

  // The whole per-request cost: one observation. Label values come from a bounded set
  // (route patterns × methods × statuses). A callback hook, not an async one: no promise
  // per request. (prom-client's label children hash their labels on each observation
  // too, so caching them would save nothing.)
  app.addHook('onResponse', (request, reply, done) => {
    duration.observe({ method: request.method, route: request.routeOptions.url ?? UNMATCHED, status_code: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!endpoint.allows(request.headers.authorization)) {
      return reply.code(METRICS_UNAUTHORIZED.status).headers(METRICS_UNAUTHORIZED.headers).send(METRICS_UNAUTHORIZED.body);
    }
    return reply.type(endpoint.contentType).send(await endpoint.render());
  });
}
