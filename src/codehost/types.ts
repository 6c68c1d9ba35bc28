/**
 * Credentials for reading a repository. They are handed to git through its environment
 * or a private temporary file, never through argv or the URL (see git-auth.ts).
 */
export type GitAuth =
  /** HTTP(S) basic authentication: a password or an access token (GitHub: `x-access-token`). */
  | { kind: 'basic'; username: string; password: string }
  /**
   * An unencrypted SSH private key (OpenSSH or PEM format). `knownHosts` (lines of an
   * OpenSSH known_hosts file) pins the host keys; without it the first key seen is trusted
   * and remembered (see git-auth.ts).
   */
  | { kind: 'ssh-key'; privateKey: string; knownHosts?: string };

/** One repository as a code-host integration lists it (the API's Repository resource). */
export interface CodehostRepository {
  /** Positive integer, stable for the repository (GitHub's id, or derived from the URL for `git`). */
  id: number;
  owner: string;
  name: string;
  /** What users deploy from (`source_config.repo_url`); never carries credentials. */
  url: string;
  /** What git clones; the same as `url` for the `git` provider. */
  cloneUrl: string;
  defaultBranch: string;
}

export interface ListOptions {
  signal?: AbortSignal;
}

/** A code-host integration of a workspace, whichever kind. */
export interface CodehostProvider {
  readonly kind: 'git' | 'github';
  listRepositories(options?: ListOptions): Promise<CodehostRepository[]>;
  /**
   * Credentials to clone `url` with, or undefined when none are needed or `url` does not
   * belong to this integration (credentials are never sent to another host).
   */
  cloneAuth(url: string, options?: ListOptions): Promise<GitAuth | undefined>;
}

/**
 * Receives one line of git's output, already scrubbed of credentials. It may be async; a
 * log that throws or rejects does not stop git (see safeLog).
 */
export type LogLine = (line: string) => unknown;

/** Wraps a caller's log so that its failures cannot break a running git command. */
export function safeLog(log: LogLine | undefined): (line: string) => void {
  if (!log) return () => undefined;
  return (line) => {
    try {
      const pending = log(line);
      if (pending instanceof Promise) pending.catch(() => undefined);
    } catch {
      // A lost log line is better than a lost checkout.
    }
  };
}
