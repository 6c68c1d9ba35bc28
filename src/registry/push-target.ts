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

export interface DeploymentPushTarget {
  /** The push-token answer's `registry_url`: the CLI pushes `<registry_url>/<name>:<tag>`. */
  registryUrl: string;
  /** The repository grant for the deployment's push credential: every repository below its path. */
  repositoryGrant: string;
  /** The repository path (without host) below which the deployment's images live. */
  repositoryPath: string;
}

/**
 * One repository path per deployment, `<prefix>/<deployment id>`. The LangGraph CLI appends an
 * image name of its own choosing, so the push credential covers the whole path, and a credential
 * for one deployment can never write into another's.
 */
export function deploymentPushTarget(location: RegistryLocation, deploymentId: string): DeploymentPushTarget {
  const repositoryPath = location.pathPrefix === '' ? deploymentId : `${location.pathPrefix}/${deploymentId}`;
  if (!isRepositoryName(repositoryPath)) {
    throw new RegistryLocationError(`deployment id "${deploymentId}" cannot be part of a repository name`);
  }
  return { registryUrl: `${location.host}/${repositoryPath}`, repositoryGrant: `${repositoryPath}/*`, repositoryPath };
}
