export interface ApiResponse<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text, sent as is (for malformed JSON and similar). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Sent as X-Api-Key unless null. */
  key?: string | null;
  tenant?: string;
}

/** A small client for tests: JSON in, JSON out, every header explicit. */
export function client(baseUrl: string, defaults: { key?: string; tenant?: string } = {}) {
  return async function request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? defaults.key : options.key;
    if (key) headers['X-Api-Key'] = key;
    const tenant = options.tenant ?? defaults.tenant;
    if (tenant) headers['X-Tenant-Id'] = tenant;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['Content-Type'] = 'application/json';
    }
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await response.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: response.status, body: parsed as T, text, headers: response.headers };
  };
}

export type Client = ReturnType<typeof client>;
