import { createHash, timingSafeEqual } from 'node:crypto';
import type { Registry } from 'prom-client';

/**
 * One /metrics answer: the registries' figures in Prometheus text format, behind an
 * optional bearer token. The tenant registries (figures naming listeners, workspaces or
 * deployments) are served only when a token is set, that is to scrapes that presented it.
 */
export class MetricsEndpoint {
  readonly #registries: readonly Registry[];
  readonly #tokenDigest: Buffer | undefined;

  constructor(registries: readonly Registry[], token: string | undefined, tenantRegistries: readonly Registry[] = []) {
    this.#tokenDigest = token === undefined ? undefined : digest(token);
    this.#registries = this.#tokenDigest ? [...registries, ...tenantRegistries] : registries;
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
