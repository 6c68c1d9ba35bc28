import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { newFileSink } from '../sources/new-file.js';
import { MAX_UPLOAD_BYTES } from '../sources/uploads.js';
import { DriverError } from '../engine/drivers/types.js';
import type { HeartbeatView, JobSourceView, LogBatch, RunnerInputsAnswer, RunnerInputsReport, RunnerJobView, RunnerResult } from '../contract/build-runners.js';

/** The control plane refused a call about a job this runner no longer holds (409 build_lease_lost, 404). */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** A call the control plane answered with an error, or could not be made; the message never holds the key. */
export class RunnerCallError extends Error {
  override name = 'RunnerCallError';

  /** The HTTP status Berth answered; undefined when it could not be reached. */
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The runner protocol's calls (docs/build-runners.md), over fetch. */
export class RunnerClient {
  constructor(
    private readonly baseUrl: string,
    private readonly key: string,
  ) {}

  claim(labels: string[], waitSeconds: number, signal: AbortSignal): Promise<{ job: RunnerJobView | null }> {
    return this.#call('POST', '/v1/runner/jobs/claim', { ...(labels.length > 0 ? { labels } : {}), wait: waitSeconds }, signal, (waitSeconds + 15) * 1000);
  }

  heartbeat(jobId: string, token: string): Promise<HeartbeatView> {
    return this.#call('POST', `/v1/runner/jobs/${jobId}/heartbeat`, { lease_token: token });
  }

  source(jobId: string, token: string): Promise<JobSourceView> {
    return this.#call('GET', `/v1/runner/jobs/${jobId}/source?lease_token=${encodeURIComponent(token)}`);
  }

  logs(jobId: string, batch: LogBatch): Promise<{ stored: boolean }> {
    return this.#call('POST', `/v1/runner/jobs/${jobId}/logs`, batch);
  }

  inputs(jobId: string, report: RunnerInputsReport): Promise<RunnerInputsAnswer> {
    return this.#call('POST', `/v1/runner/jobs/${jobId}/inputs`, report);
  }

  result(jobId: string, result: RunnerResult): Promise<{ outcome: string }> {
    return this.#call('POST', `/v1/runner/jobs/${jobId}/result`, result);
  }

  /**
   * Downloads an uploaded archive from the URL a source answer gave into `file` (new),
   * refusing more than an upload may hold. The key goes to BERTH_URL's origin only: the
   * URL's path and query are asked of it, wherever the URL itself points (the server's public URL setting
   * may be an address this machine does not reach, and the key is not for anyone else).
   * A refusal no retry can change (expired, gone) is a DriverError, reported as the build's failure.
   */
  async download(url: string, file: string, signal: AbortSignal): Promise<void> {
    const target = new URL(url);
    const where = `${new URL(this.baseUrl).origin}${target.pathname}${target.search}`;
    let response: Response;
    try {
      response = await fetch(where, { headers: { 'X-Api-Key': this.key }, signal: AbortSignal.any([signal, AbortSignal.timeout(30 * 60_000)]) });
    } catch (error) {
      throw new RunnerCallError(`GET ${target.pathname} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!response.ok || !response.body) {
      const detail = detailOf(await response.text()) ?? `status ${response.status}`;
      if (response.status === 409 || response.status === 404) throw new LeaseLostError(detail);
      if (response.status === 403 || response.status === 410) throw new DriverError(`the uploaded archive could not be downloaded: ${detail}`);
      throw new RunnerCallError(`GET ${target.pathname} answered ${response.status}: ${detail}`);
    }
    const sink = await newFileSink(file);
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), new ByteLimit(MAX_UPLOAD_BYTES), sink, { signal });
  }

  async #call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal, timeoutMs = 30_000): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { 'X-Api-Key': this.key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      // fetch says only "fetch failed"; why (ECONNREFUSED, a name not found, a timeout) is in its cause.
      const cause = error instanceof Error && error.cause instanceof Error ? ` (${(error.cause as NodeJS.ErrnoException).code ?? error.cause.message})` : '';
      throw new RunnerCallError(`${method} ${path.replace(/\?.*$/, '')} failed: ${error instanceof Error ? error.message : String(error)}${cause}`);
    }
    const text = await response.text();
    if (response.status === 409 || response.status === 404) throw new LeaseLostError(detailOf(text) ?? `status ${response.status}`);
    if (!response.ok) throw new RunnerCallError(`${method} ${path.replace(/\?.*$/, '')} answered ${response.status}: ${detailOf(text) ?? ''}`, response.status);
    return JSON.parse(text) as T;
  }
}

function detailOf(text: string): string | undefined {
  try {
    const detail = (JSON.parse(text) as { detail?: unknown }).detail;
    return typeof detail === 'string' ? detail : undefined;
  } catch {
    return undefined;
  }
}

/** Fails the stream past `max` bytes: an archive larger than any upload is not the one Berth took. */
export class ByteLimit extends Transform {
  #bytes = 0;

  constructor(private readonly max: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#bytes += chunk.length;
    if (this.#bytes > this.max) done(new DriverError(`the uploaded archive is larger than ${this.max} bytes, which no upload may be.`));
    else done(null, chunk);
  }
}
