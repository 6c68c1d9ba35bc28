import http from 'node:http';
import path from 'node:path';
import type { Logger } from 'pino';
import { mkdir, chmod } from 'node:fs/promises';
import { RunnerCallError, RunnerClient } from './client.js';
import type { RunnerConfig } from './config.js';
import { type DriverFor, runJob } from './job.js';
import { langGraphDriverFor } from './local-build.js';
import { type JobOutcome, RunnerMetrics } from './metrics.js';
import { redeliverSpooled } from './redeliver.js';

const CLAIM_RETRY_MS = 2_000;

/**
 * `berth builder`: `concurrency` loops, each long-polling the control plane for a build job
 * and running it (job.ts). A health endpoint answers `GET /healthz` with what runs now, and
 * `GET /metrics` in Prometheus' format (metrics.ts).
 */
export class BuildRunner {
  readonly #client: RunnerClient;
  readonly #stop = new AbortController();
  readonly #running = new Set<string>();
  #server: http.Server | undefined;
  #lastContact: string | null = null;
  readonly #metrics: RunnerMetrics;

  constructor(
    private readonly config: RunnerConfig,
    private readonly logger: Logger,
    private readonly driverFor: DriverFor = langGraphDriverFor(config),
  ) {
    this.#client = new RunnerClient(config.berthUrl, config.runnerKey);
    this.#metrics = new RunnerMetrics(config.concurrency);
  }

  async run(): Promise<void> {
    // Its mirrors, downloaded archives and build directories are the runner's alone: no other user of the host (the build user least) reads them.
    await mkdir(this.config.dataDir, { recursive: true, mode: 0o700 });
    await chmod(this.config.dataDir, 0o700);
    if (this.config.healthPort > 0) await this.#serveHealth();
    this.logger.info({ url: this.config.berthUrl, labels: this.config.labels, concurrency: this.config.concurrency }, 'berth builder is running');
    // Before claiming: a claim of its own could take over the very job whose lines wait here.
    await redeliverSpooled(this.#client, path.join(this.config.dataDir, 'spool'), this.logger, this.#stop.signal);
    await Promise.all(Array.from({ length: this.config.concurrency }, () => this.#loop()));
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  stop(): void {
    this.#stop.abort();
  }

  async #loop(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      let job;
      try {
        ({ job } = await this.#client.claim(this.config.labels, this.config.pollSeconds, signal));
        const now = new Date();
        this.#lastContact = now.toISOString();
        this.#metrics.polled(now);
      } catch (error) {
        if (signal.aborted) break;
        // Berth unreachable or answering an error is expected weather: its message, not a stack every few seconds.
        if (error instanceof RunnerCallError) this.logger.warn({ error: error.message }, 'asking for a build failed; trying again');
        else this.logger.warn({ err: error }, 'asking for a build failed; trying again');
        await new Promise((resolve) => setTimeout(resolve, CLAIM_RETRY_MS));
        continue;
      }
      if (!job) continue;
      this.#running.add(job.id);
      this.#metrics.started();
      let outcome: JobOutcome = 'abandoned';
      try {
        outcome = await runJob(this.#client, job, this.driverFor, this.logger, signal, {
          archives: path.join(this.config.dataDir, 'archives'),
          spool: path.join(this.config.dataDir, 'spool'),
          spoolMaxBytes: this.config.spoolMaxBytes,
        });
      } finally {
        this.#running.delete(job.id);
        this.#metrics.ended(outcome);
      }
    }
  }

  async #serveHealth(): Promise<void> {
    this.#server = http.createServer((request, response) => {
      if (request.url === '/metrics') {
        this.#metrics.registry.metrics().then(
          (text) => response.writeHead(200, { 'content-type': this.#metrics.registry.contentType }).end(text),
          () => response.writeHead(500).end(),
        );
        return;
      }
      if (request.url !== '/healthz') {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ status: 'ok', running: [...this.#running], concurrency: this.config.concurrency, last_contact: this.#lastContact }));
    });
    await new Promise<void>((resolve, reject) => {
      this.#server?.once('error', reject);
      this.#server?.listen(this.config.healthPort, this.config.healthHost, () => resolve());
    });
  }
}
