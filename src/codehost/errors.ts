/**
 * Why a code-host operation failed, as a closed list the API and engine can map
 * (an unknown ref is the user's mistake; an unreachable host may pass on a retry).
 */
export type CodehostFailure =
  | 'invalid-url'
  | 'invalid-ref'
  | 'local-disabled'
  | 'repository-not-found'
  | 'ref-not-found'
  | 'auth-failed'
  | 'host-key'
  | 'unreachable'
  /** The remote did not answer in time (BERTH_GIT_TIMEOUT_SECONDS): git was stopped. */
  | 'timeout'
  | 'too-large'
  | 'destination-not-empty'
  | 'aborted'
  | 'git-missing'
  | 'provider'
  | 'failed';

/**
 * A failure a person can act on. The message names what failed (the repository URL
 * without credentials, the ref) and never carries a credential.
 */
export class CodehostError extends Error {
  override name = 'CodehostError';

  constructor(
    readonly failure: CodehostFailure,
    message: string,
  ) {
    super(message);
  }
}
