import { createHash, timingSafeEqual } from 'node:crypto';
import type { Registry } from 'prom-client';

/** Settings of GET /metrics, read with the rest of the configuration. */
/** One /metrics answer: the registries' figures in Prometheus text format, behind an optional bearer token. */
export class MetricsEndpoint {
  readonly #registries: readonly Registry[];
  readonly #tokenDigest: Buffer | undefined;

  constructor(registries: readonly Registry[], token: string | undefined) {
    this.#registries = registries;
    this.#tokenDigest = token === undefined ? undefined : digest(token);
  }

  get contentType(): string {
    return this.#registries[0]?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8';
  }

  /** Whether an `Authorization` header value lets the caller read the metrics. */
  allows(authorization: string | undefined): boolean {
    if (!this.#tokenDigest) return true;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    // Digests have one length, so the comparison takes the same time whatever was sent.
    return match !== null && timingSafeEqual(digest(match[1] as string), this.#tokenDigest);
  }

  async render(): Promise<string> {
    const texts = await Promise.all(this.#registries.map((registry) => registry.metrics()));
    return texts.filter((text) => text.trim() !== '').join('\n');
  }
}

/** What a refused scrape gets, in the API's error shape. */
export const METRICS_UNAUTHORIZED = {
  status: 401,
  headers: { 'www-authenticate': 'Bearer realm="berth-metrics"' },
  body: { detail: "GET /metrics requires 'Authorization: Bearer <token>' with the token set in BERTH_METRICS_TOKEN." },
} as const;

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
