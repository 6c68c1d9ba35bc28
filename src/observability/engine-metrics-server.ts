import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { registerDatabaseMetrics, type RevisionCounts } from './database-metrics.js';
import { METRICS_UNAUTHORIZED, MetricsEndpoint } from './metrics-endpoint.js';
import { processMetrics, tenantRegistry } from './metrics.js';

export interface EngineMetricsServer {
  /** e.g. `http://127.0.0.1:9464`. */
  address: string;
  close(): Promise<void>;
}

/**
 * `berth engine` has no API server; this small one serves its metrics (GET /metrics) and
 * a liveness answer (GET /ok) on their own port, for Prometheus and probes.
 */
export async function serveEngineMetrics(options: {
  port: number;
  host: string;
  token: string | undefined;
  revisionCounts: () => Promise<RevisionCounts>;
}): Promise<EngineMetricsServer> {
  const registry = new Registry();
  registerDatabaseMetrics(registry, options.revisionCounts);
  const endpoint = new MetricsEndpoint([processMetrics(), registry], options.token, [tenantRegistry]);
  const send = (response: http.ServerResponse, status: number, body: string, headers: Record<string, string>) => {
    response.writeHead(status, { 'content-length': Buffer.byteLength(body), ...headers });
    response.end(body);
  };
  const json = { 'content-type': 'application/json; charset=utf-8' };

  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || (path !== '/metrics' && path !== '/ok')) return send(response, 404, '{"detail":"Not Found"}', json);
    if (path === '/ok') return send(response, 200, '{"ok":true}', json);
    if (!endpoint.allows(request.headers.authorization)) {
      return send(response, METRICS_UNAUTHORIZED.status, JSON.stringify(METRICS_UNAUTHORIZED.body), { ...json, ...METRICS_UNAUTHORIZED.headers });
    }
    endpoint.render().then(
      (text) => send(response, 200, text, { 'content-type': endpoint.contentType }),
      () => send(response, 500, '{"detail":"Internal Server Error"}', json),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    address: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
