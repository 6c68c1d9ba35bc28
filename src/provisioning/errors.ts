/**
 * A per-deployment database or Redis could not be provisioned or removed. The message names
 * the service and its address (host:port), never a password, and says what to check.
 */
export class ProvisioningError extends Error {
  constructor(
    readonly service: 'postgres' | 'redis',
    /** host:port of the server. */
    readonly server: string,
    message: string,
  ) {
    super(message);
    this.name = 'ProvisioningError';
  }
}

/** host:port of a service URL, for messages; the URL's credentials never leave this function. */
export function serverOf(url: URL, defaultPort: number): string {
  const host = url.hostname.includes(':') && !url.hostname.startsWith('[') ? `[${url.hostname}]` : url.hostname;
  return `${host || 'localhost'}:${url.port || defaultPort}`;
}

/** Parses a service URL from configuration without ever echoing it (it holds a password). */
export function parseServiceUrl(value: string, variable: string, protocols: string[]): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${variable} is not a valid URL`);
  }
  if (!protocols.includes(url.protocol)) throw new Error(`${variable} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  return url;
}
