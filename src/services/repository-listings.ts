import { LRUCache } from 'lru-cache';
import type { CodehostRepository } from '../codehost/index.js';

/** Which integration, as it stands: a write to it (a new `updated_at`) makes earlier answers stale. */
export interface ListedIntegration {
  id: string;
  updated_at: string;
}

export interface RepositoryListingsOptions<T extends ListedIntegration> {
  /** Asks the code host; gets the deadline of the whole listing as its signal. */
  list: (integration: T, signal: AbortSignal) => Promise<CodehostRepository[]>;
  /** How long an answer is reused. */
  ttlMs: number;
  /** How long one listing may take in all, whoever waits for it. */
  deadlineMs: number;
}

/** A listing that failed because its deadline passed (the remote did not answer in time). */
export class ListingDeadlineError extends Error {
  override name = 'ListingDeadlineError';

  constructor(
    readonly deadlineMs: number,
    cause: unknown,
  ) {
    super(`the listing took longer than ${Math.ceil(deadlineMs / 1000)} s`, { cause });
  }
}

/**
 * Repository listings, shared per integration: requests that arrive while the code host is
 * being asked wait for that one call instead of starting their own (60 listings of one
 * integration are one `git ls-remote` per repository, not 60), and its answer is reused
 * for `ttlMs`. The call runs under its own deadline, not any one request's, so a client
 * that goes away does not fail the others. Failures are not kept: the next request asks
 * again. A write to the integration changes its `updated_at`, so later requests never get
 * an answer from before it, on this replica or another.
 */
export function createRepositoryListings<T extends ListedIntegration>({ list, ttlMs, deadlineMs }: RepositoryListingsOptions<T>) {
  const answers = new LRUCache<string, { version: string; repositories: CodehostRepository[] }>({ max: 1000, ttl: ttlMs });
  const running = new Map<string, { version: string; listing: Promise<CodehostRepository[]> }>();

  function start(integration: T): Promise<CodehostRepository[]> {
    const deadline = AbortSignal.timeout(deadlineMs);
    const listing = list(integration, deadline).then(
      (repositories) => {
        answers.set(integration.id, { version: integration.updated_at, repositories });
        return repositories;
      },
      (error: unknown) => {
        throw deadline.aborted ? new ListingDeadlineError(deadlineMs, error) : error;
      },
    );
    const entry = { version: integration.updated_at, listing };
    running.set(integration.id, entry);
    const done = () => {
      if (running.get(integration.id) === entry) running.delete(integration.id);
    };
    listing.then(done, done);
    return listing;
  }

  return {
    /** The integration's repositories: remembered, being listed, or listed now. */
    repositories(integration: T): Promise<CodehostRepository[]> {
      const answer = answers.get(integration.id);
      if (answer?.version === integration.updated_at) return Promise.resolve(answer.repositories);
      const current = running.get(integration.id);
      if (current?.version === integration.updated_at) return current.listing;
      return start(integration);
    },

    /** Drops what is known of a deleted integration. */
    forget(id: string): void {
      answers.delete(id);
      running.delete(id);
    },
  };
}
