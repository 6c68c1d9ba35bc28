/**
 * How Berth names a place in a registry: the distribution grammar for repository paths, and
 * `BERTH_REGISTRY` (`host[:port][/path]`). Here rather than in registry/ because the settings
 * (config.ts) read BERTH_REGISTRY at boot and sit below every adapter.
 */

// The distribution reference grammar for a repository path (components without a host): lowercase
// alphanumerics joined by `.`, `_`, `__` or runs of `-`, separated by `/`.
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const REPOSITORY_NAME = new RegExp(`^${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`);
const MAX_REPOSITORY_NAME = 255;

export function isRepositoryName(name: string): boolean {
  return name.length <= MAX_REPOSITORY_NAME && REPOSITORY_NAME.test(name);
}

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
