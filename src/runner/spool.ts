import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { LogBatch, RunnerResult } from '../contract/build-runners.js';

/** The most a job's spool holds of batches Berth has not taken by default (BERTH_RUNNER_SPOOL_MAX_MB); past it lines are dropped, and a line says so. */
export const SPOOL_MAX_BYTES = 16 * 1024 * 1024;

type Line = LogBatch['lines'][number];

/** One record per line of the file: the claim first, then batches, acknowledgements and the report, in the order they happened. */
type SpoolRecord = { job: string; lease_token: string } | { seq: number; lines: Line[] } | { ack: number } | { result: Omit<RunnerResult, 'lease_token'> };

/** What a spool left by an earlier process still holds to deliver. */
export interface SpooledJob {
  file: string;
  jobId: string;
  leaseToken: string;
  /** In the order they were numbered. */
  batches: { seq: number; lines: Line[] }[];
  result: Omit<RunnerResult, 'lease_token'> | null;
}

/**
 * A claimed job's log batches and report on disk (`<data dir>/spool`, one file per claim,
 * 0600), so that lines the control plane has not taken survive the runner losing it, and a
 * restart. Append-only: each batch and the report is written and fsync'd before it is sent;
 * an acknowledgement is appended after (a lost one only re-sends a batch, which Berth drops
 * by its number). Once every batch written is acknowledged the file is cut back to its
 * first record; it is removed when the report is taken or the claim is gone.
 */
export class JobSpool {
  #unacked = new Map<number, number>();
  #unackedBytes = 0;
  #headerBytes = 0;
  #hasResult = false;

  private constructor(
    private readonly handle: FileHandle,
    readonly file: string,
    private readonly maxBytes: number,
  ) {}

  static async open(dir: string, jobId: string, leaseToken: string, maxBytes = SPOOL_MAX_BYTES): Promise<JobSpool> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `${jobId}-${createHash('sha256').update(leaseToken).digest('hex').slice(0, 12)}.jsonl`);
    const handle = await open(file, 'w', 0o600);
    const spool = new JobSpool(handle, file, maxBytes);
    spool.#headerBytes = await spool.#append({ job: jobId, lease_token: leaseToken }, true);
    return spool;
  }

  /**
   * Whether a batch of this many bytes fits; if so its room is taken until it is acknowledged.
   * A batch is always taken when none waits: with a small bound (BERTH_RUNNER_SPOOL_MAX_MB) one
   * batch of long lines may be larger than it, and lines must not be dropped while Berth takes them.
   */
  reserve(seq: number, lines: Line[]): boolean {
    const bytes = Buffer.byteLength(JSON.stringify({ seq, lines })) + 1;
    if (this.#unacked.size > 0 && this.#unackedBytes + bytes > this.maxBytes) return false;
    this.#unacked.set(seq, bytes);
    this.#unackedBytes += bytes;
    return true;
  }

  async batch(seq: number, lines: Line[]): Promise<void> {
    await this.#append({ seq, lines }, true);
  }

  async acked(seq: number): Promise<void> {
    this.#unackedBytes -= this.#unacked.get(seq) ?? 0;
    this.#unacked.delete(seq);
    if (this.#unacked.size === 0 && !this.#hasResult) await this.handle.truncate(this.#headerBytes);
    else await this.#append({ ack: seq }, false);
  }

  async result(report: Omit<RunnerResult, 'lease_token'>): Promise<void> {
    this.#hasResult = true;
    await this.#append({ result: report }, true);
  }

  async remove(): Promise<void> {
    await this.handle.close().catch(() => {});
    await rm(this.file, { force: true });
  }

  /** Keeps the file for a later process (the runner is stopping). */
  async close(): Promise<void> {
    await this.handle.close().catch(() => {});
  }

  async #append(record: SpoolRecord, sync: boolean): Promise<number> {
    const text = `${JSON.stringify(record)}\n`;
    // At the file's end as it is now: after a truncate, a write at the handle's own position would leave a hole.
    const { size } = await this.handle.stat();
    await this.handle.write(text, size);
    if (sync) await this.handle.sync();
    return Buffer.byteLength(text);
  }
}

/** The spools an earlier process left (killed, or stopped mid-delivery); a torn last record (killed mid-write) is ignored. */
export async function spooledJobs(dir: string): Promise<SpooledJob[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const found: SpooledJob[] = [];
  for (const name of names.filter((entry) => entry.endsWith('.jsonl')).sort()) {
    const file = path.join(dir, name);
    const records: SpoolRecord[] = [];
    for (const line of (await readFile(file, 'utf8')).split('\n')) {
      try {
        if (line) records.push(JSON.parse(line) as SpoolRecord);
      } catch {
        break;
      }
    }
    const header = records[0];
    if (!header || !('job' in header)) {
      await rm(file, { force: true });
      continue;
    }
    const acked = new Set(records.flatMap((record) => ('ack' in record ? [record.ack] : [])));
    const batches = records.flatMap((record) => ('seq' in record && !acked.has(record.seq) ? [record] : []));
    const result = records.flatMap((record) => ('result' in record ? [record.result] : []))[0] ?? null;
    found.push({ file, jobId: header.job, leaseToken: header.lease_token, batches: batches.sort((a, b) => a.seq - b.seq), result });
  }
  return found;
}
