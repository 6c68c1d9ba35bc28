import type { HeartbeatView, JobSourceView, LogBatch, RunnerJobView, RunnerResult } from '../contract/build-runners.js';

/** The control plane refused a call about a job this runner no longer holds (409 build_lease_lost, 404). */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** A call the control plane answered with an error, or could not be made; the message never holds the key. */
export class RunnerCallError extends Error {
  override name = 'RunnerCallError';
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

  result(jobId: string, result: RunnerResult): Promise<{ outcome: string }> {
    return this.#call('POST', `/v1/runner/jobs/${jobId}/result`, result);
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
      throw new RunnerCallError(`${method} ${path.replace(/\?.*$/, '')} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    const text = await response.text();
    if (response.status === 409 || response.status === 404) throw new LeaseLostError(detailOf(text) ?? `status ${response.status}`);
    if (!response.ok) throw new RunnerCallError(`${method} ${path.replace(/\?.*$/, '')} answered ${response.status}: ${detailOf(text) ?? ''}`);
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
