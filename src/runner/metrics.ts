import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

/** How a claimed job ended for this runner. */
export type JobOutcome = 'succeeded' | 'failed' | 'reused' | 'stopped' | 'abandoned';

/**
 * What `berth builder` tells Prometheus at `GET /metrics` on its health port: builds
 * running, jobs ended by outcome (`reused`: the control plane answered the build's inputs
 * with an image built before, so nothing was built; `stopped`: cancelled, lease lost or the runner
 * stopping; `abandoned`: the job could not be run and goes to another claim once its
 * lease runs out), and when the control plane last answered a claim. A registry of its
 * own: the runner shares nothing with the server's metrics.
 */
export class RunnerMetrics {
  readonly registry = new Registry();
  readonly #running: Gauge;
  readonly #jobs: Counter<'outcome'>;
  readonly #lastPoll: Gauge;

  constructor(concurrency: number) {
    collectDefaultMetrics({ register: this.registry, prefix: 'berth_runner_' });
    const registers = [this.registry];
    this.#running = new Gauge({ name: 'berth_runner_jobs_running', help: 'Builds this runner is running now.', registers });
    new Gauge({ name: 'berth_runner_concurrency', help: 'Builds this runner runs at most at once.', registers }).set(concurrency);
    this.#jobs = new Counter({ name: 'berth_runner_jobs_total', help: 'Claimed build jobs by how they ended.', labelNames: ['outcome'], registers });
    this.#lastPoll = new Gauge({
      name: 'berth_runner_last_poll_timestamp_seconds',
      help: 'When the control plane last answered a claim (seconds since the epoch); 0 before the first.',
      registers,
    });
    for (const outcome of ['succeeded', 'failed', 'reused', 'stopped', 'abandoned'] satisfies JobOutcome[]) this.#jobs.inc({ outcome }, 0);
  }

  started(): void {
    this.#running.inc();
  }

  ended(outcome: JobOutcome): void {
    this.#running.dec();
    this.#jobs.inc({ outcome });
  }

  polled(at: Date): void {
    this.#lastPoll.set(at.getTime() / 1000);
  }
}
