import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DriverError, type RunRequest, type RunningRevision, type RuntimeDriver, type StepContext } from '../src/engine/drivers/types.js';

/**
 * The engine bench's runtime: as close to instant as a runtime can be while `DEPLOYED`
 * still means a real `GET /ok` answered. One HTTP server in this process serves every
 * revision under its own path, and the health check goes over a kept-alive connection, so
 * a revision costs one request instead of a server's listen and close and a new TCP
 * connection each (the tests' InProcessRuntime, ~0.3 ms of CPU per revision here).
 */
export class InstantRuntime implements RuntimeDriver {
  readonly name = 'instant';
  readonly #serving = new Map<string, string>();
  readonly #agent = new http.Agent({ keepAlive: true });
  #server: Promise<{ server: http.Server; url: string }> | undefined;

  async unavailableReason(): Promise<null> {
    return null;
  }

  async start(request: RunRequest, context: StepContext): Promise<RunningRevision> {
    const { url: base } = await this.#listening();
    const handle = `${request.instanceName}-${request.revisionId}`;
    this.#serving.set(handle, request.deploymentId);
    const url = `${base}/r/${encodeURIComponent(handle)}`;
    const status = await this.#statusOf(`${url}/ok`, context.signal);
    if (status !== 200) {
      this.#serving.delete(handle);
      throw new DriverError(`GET /ok on ${url} answered ${status ?? 'nothing'} instead of 200.`);
    }
    return { url, handle };
  }

  async retire(handle: string): Promise<void> {
    this.#serving.delete(handle);
  }

  async teardown(deploymentId: string): Promise<void> {
    for (const [handle, owner] of this.#serving) if (owner === deploymentId) this.#serving.delete(handle);
  }

  async close(): Promise<void> {
    this.#agent.destroy();
    const listening = await this.#server;
    if (listening) await new Promise<void>((resolve) => listening.server.close(() => resolve()));
  }

  #listening(): Promise<{ server: http.Server; url: string }> {
    this.#server ??= new Promise((resolve) => {
      const server = http.createServer((req, res) => {
        const match = /^\/r\/([^/]+)\/ok$/.exec(req.url ?? '');
        const ok = match !== null && this.#serving.has(decodeURIComponent(match[1] as string));
        res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok }));
      });
      server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    });
    return this.#server;
  }

  #statusOf(url: string, signal: AbortSignal): Promise<number | undefined> {
    return new Promise((resolve) => {
      const request = http.get(url, { signal, agent: this.#agent }, (response) => {
        response.resume();
        resolve(response.statusCode);
      });
      request.on('error', () => resolve(undefined));
    });
  }
}
