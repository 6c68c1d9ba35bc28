import { existsSync, constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';

/**
 * What the container tools Berth runs (podman, buildah, docker) share: where they are, and
 * the configuration scripts/setup-containers.sh writes for podman and buildah.
 */
export const BERTH_CONTAINERS_CONF = '/etc/berth/containers.conf';
export const BERTH_REGISTRIES_CONF = '/etc/berth/registries.conf';

/** The environment for podman or buildah: Berth's containers.conf and registries.conf (runc, ulimits, search registries) unless it names others. */
export function withContainersConf(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...base };
  if (!env.CONTAINERS_CONF && present(BERTH_CONTAINERS_CONF)) env.CONTAINERS_CONF = BERTH_CONTAINERS_CONF;
  if (!env.CONTAINERS_REGISTRIES_CONF && present(BERTH_REGISTRIES_CONF)) env.CONTAINERS_REGISTRIES_CONF = BERTH_REGISTRIES_CONF;
  return env;
}

/** The executable `program` on the search path, or null. */
export async function findOnPath(program: string, searchPath: string | undefined): Promise<string | null> {
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, program);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return null;
}

function present(file: string): boolean {
  try {
    return existsSync(file);
  } catch {
    return false;
  }
}
