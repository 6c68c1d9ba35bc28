import { isRepositoryName } from './access.js';

/** Where Berth's registry is, from `BERTH_REGISTRY` (`host[:port][/path]`). */
export interface RegistryLocation {
  /** `host[:port]`: what `docker login` is given. */
  host: string;
  /** Repository path prefix below the host, without slashes at either end; may be empty. */
  pathPrefix: string;
}

export class RegistryLocationError extends Error {}

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

export function parseRegistryLocation(value: string): RegistryLocation {
  const trimmed = value.trim().replace(/\/+$/, '');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    throw new RegistryLocationError(`BERTH_REGISTRY is "${trimmed}": give host[:port][/path] without a scheme (image references have none)`);
  }
  const slash = trimmed.indexOf('/');
  const host = slash < 0 ? trimmed : trimmed.slice(0, slash);
  const pathPrefix = slash < 0 ? '' : trimmed.slice(slash + 1);
  if (!HOST.test(host)) throw new RegistryLocationError(`BERTH_REGISTRY is "${trimmed}": "${host}" is not a host[:port]`);
  if (pathPrefix !== '' && !isRepositoryName(pathPrefix)) {
    throw new RegistryLocationError(`BERTH_REGISTRY is "${trimmed}": the path "${pathPrefix}" must be lowercase letters, digits and . _ - separated by /`);
  }
  return { host, pathPrefix };
}
