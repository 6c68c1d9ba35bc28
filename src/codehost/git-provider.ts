import { remoteDefaultBranch, resolveRemote } from './remote.js';
import type { CodehostProvider, CodehostRepository, GitAuth, ListOptions } from './types.js';
import { repositoryId, repositoryKey, type RepositoryLocation } from './url.js';

export interface GitRepositoryEntry {
  /** Any URL form git fetches from; credentials embedded in an http(s) URL are split off and used. */
  url: string;
  /** Credentials for this repository alone. */
  auth?: GitAuth;
}

export interface GitProviderConfig {
  repositories: (string | GitRepositoryEntry)[];
  /** Credentials for every repository that brings none of its own. */
  auth?: GitAuth;
  /** Where SSH host keys seen first are remembered (Berth: `<data dir>/git/known_hosts`). */
  knownHostsFile?: string;
  /** Whether `file://` URLs and local paths are allowed (default true; see RemoteOptions). */
  allowLocal?: boolean;
  /** How long each `git ls-remote` may take (see RemoteOptions). */
  timeoutMs?: number;
}

interface Entry {
  location: RepositoryLocation;
  auth: GitAuth | undefined;
}

/** Remotes asked at once while listing; each is one short `git ls-remote`. */
const LIST_CONCURRENCY = 4;

/**
 * The `git` integration: a list of repository URLs read with the system git. Listing asks
 * each remote for its HEAD, so it also proves that the URL and credentials work; one
 * repository that fails makes the listing fail with its name in the message.
 */
export class GitProvider implements CodehostProvider {
  readonly kind = 'git';
  private readonly entries: Entry[];

  /** Throws a CodehostError ('invalid-url', 'local-disabled') for a URL it cannot use. */
  constructor(private readonly config: GitProviderConfig) {
    this.entries = config.repositories.map((item) => {
      const entry = typeof item === 'string' ? { url: item } : item;
      const remote = resolveRemote(entry.url, entry.auth ?? config.auth, config);
      return { location: remote.location, auth: remote.auth };
    });
  }

  async listRepositories(options: ListOptions = {}): Promise<CodehostRepository[]> {
    // The first failure decides the answer, so the remotes still being asked are let go.
    const failed = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, failed.signal]) : failed.signal;
    try {
      return await mapWithConcurrency(this.entries, LIST_CONCURRENCY, async ({ location, auth }) => {
        const defaultBranch = await remoteDefaultBranch(location.url, auth, {
          knownHostsFile: this.config.knownHostsFile,
          allowLocal: this.config.allowLocal,
          timeoutMs: this.config.timeoutMs,
          signal,
        });
        return { id: repositoryId(location), owner: location.owner, name: location.name, url: location.url, cloneUrl: location.url, defaultBranch };
      });
    } catch (error) {
      failed.abort();
      throw error;
    }
  }

  async cloneAuth(url: string): Promise<GitAuth | undefined> {
    let key: string;
    try {
      key = repositoryKey(resolveRemote(url, undefined).location);
    } catch {
      return undefined;
    }
    return this.entries.find((entry) => repositoryKey(entry.location) === key)?.auth;
  }
}

async function mapWithConcurrency<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
