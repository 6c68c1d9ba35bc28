import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DriverError, type RunRequest, type RunningRevision, type RuntimeDriver, type StepContext } from '../../../src/engine/drivers/types.js';

/**
 * Runs each revision as a tiny HTTP server inside this process that answers `GET /ok`.
 * For tests and benchmarks of the engine itself: the engine still health-checks a real
 * URL, so `DEPLOYED` keeps its meaning. Images named with `unhealthy` answer 503, to
 * exercise failures.
 */
export class InProcessRuntime implements RuntimeDriver {
  readonly name = 'in-process';
  readonly #servers = new Map<string, { server: http.Server; deploymentId: string }>();
  /** Every `start` call, for tests that check what the engine asked for. */
  readonly started: RunRequest[] = [];

  async unavailableReason(): Promise<null> {
    return null;
  }

  async start(request: RunRequest, context: StepContext): Promise<RunningRevision> {
    this.started.push(request);
    const healthy = !request.image.includes('unhealthy');
    const server = http.createServer((req, res) => {
      const ok = req.url === '/ok' && healthy;
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const handle = `${request.instanceName}-${request.revisionId}`;
    this.#servers.set(handle, { server, deploymentId: request.deploymentId });
    await context.log('INFO', `Started ${request.image} at ${url}`);
    const response = await fetch(`${url}/ok`, { signal: context.signal }).catch(() => undefined);
    if (response?.status !== 200) {
      await this.retire(handle);
      throw new DriverError(`GET /ok on ${url} answered ${response?.status ?? 'nothing'} instead of 200.`);
    }
    return { url, handle };
  }

  async retire(handle: string): Promise<void> {
    const entry = this.#servers.get(handle);
    this.#servers.delete(handle);
    if (entry) await new Promise<void>((resolve) => entry.server.close(() => resolve()));
  }

  async teardown(deploymentId: string): Promise<void> {
    for (const [handle, entry] of this.#servers) if (entry.deploymentId === deploymentId) await this.retire(handle);
  }

  /** Handles of the instances running now. */
  running(): string[] {
    return [...this.#servers.keys()];
  }

  async closeAll(): Promise<void> {
    for (const handle of [...this.#servers.keys()]) await this.retire(handle);
  }
}
