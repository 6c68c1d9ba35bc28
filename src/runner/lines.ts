import type { Logger } from 'pino';
import type { RunnerJobView, RunnerResult } from '../contract/build-runners.js';
import type { LogLevel } from '../engine/drivers/types.js';
import { LeaseLostError, type RunnerClient } from './client.js';
import type { JobSpool } from './spool.js';

const LOG_FLUSH_MS = 500;
const LOG_BATCH_LINES = 200;
const RETRY_MS = 1_000;

type Line = { level: LogLevel; message: string };

/**
 * Batches a job's log lines and sends them in order, each batch with its number, again
 * until it is taken (Berth stores a number once). Each batch is in the job's spool before
 * it is sent, so a runner cut off from Berth, or restarted, delivers it later
 * (redeliver.ts); past the spool's bound lines are dropped and counted, and the next batch
 * that fits says how many.
 */
export class LineSender {
  #pending: Line[] = [];
  #seq = 0;
  #dropped = 0;
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> = Promise.resolve();
  #writing: Promise<void> = Promise.resolve();
  #stopped = false;
  #spoolBroken = false;

  constructor(
    private readonly client: RunnerClient,
    private readonly job: RunnerJobView,
    private readonly log: Logger,
    private readonly spool: JobSpool | undefined,
  ) {}

  add(level: LogLevel, message: string): void {
    this.#pending.push({ level, message: message.slice(0, 8192) });
    if (this.#pending.length >= LOG_BATCH_LINES) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), LOG_FLUSH_MS);
  }

  /** Sends what is left and spools the report after the lines (a restart delivers both); resolves once it is on disk. */
  async spoolReport(report: Omit<RunnerResult, 'lease_token'>): Promise<void> {
    this.#flush();
    this.#spoolWrite((spool) => spool.result(report));
    await this.#writing;
  }

  /** Sends the lines added so far at once; resolves once every line is taken (or the claim is gone). */
  async sendNow(): Promise<void> {
    this.#flush();
    await this.#sending;
  }

  /** Resolves once every line is taken (or the claim is gone). */
  async delivered(): Promise<void> {
    await this.#sending;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Once the report was taken, or the claim is gone: nothing in the spool is wanted any more. */
  async discard(): Promise<void> {
    await this.#writing;
    await this.spool?.remove();
  }

  /** The runner is stopping: the spool stays for its next start. */
  async keep(): Promise<void> {
    await this.#writing;
    await this.spool?.close();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    let lines = this.#pending;
    this.#pending = [];
    if (this.#dropped > 0) {
      const note = `${this.#dropped} build log lines were dropped here: Berth could not be reached and the runner's spool for this build was full.`;
      lines = [{ level: 'WARNING', message: note }, ...lines];
    }
    if (this.spool && !this.spool.reserve(this.#seq, lines)) {
      this.#dropped += lines.length - (this.#dropped > 0 ? 1 : 0);
      return;
    }
    this.#dropped = 0;
    const batch = { lease_token: this.job.lease_token, seq: this.#seq++, lines };
    this.#spoolWrite((spool) => spool.batch(batch.seq, batch.lines));
    const written = this.#writing;
    this.#sending = this.#sending.then(async () => {
      await written;
      for (;;) {
        if (this.#stopped) return;
        try {
          await this.client.logs(this.job.id, batch);
          this.#spoolWrite((spool) => spool.acked(batch.seq));
          return;
        } catch (error) {
          if (error instanceof LeaseLostError) return;
          this.log.warn({ err: error }, 'sending log lines failed; sending them again');
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    });
  }

  /** Spool writes in the order they were asked; a disk that fails them leaves the lines in memory only, said once. */
  #spoolWrite(write: (spool: JobSpool) => Promise<void>): void {
    const spool = this.spool;
    if (!spool) return;
    this.#writing = this.#writing.then(async () => {
      if (this.#spoolBroken) return;
      try {
        await write(spool);
      } catch (error) {
        this.#spoolBroken = true;
        this.log.warn({ err: error }, "the job's log spool could not be written; its lines are kept in memory only");
      }
    });
  }
}
