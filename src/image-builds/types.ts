import type { BuilderKind, Found } from '../containers/detect.js';

export type { BuilderKind, BuilderPreference } from '../containers/detect.js';

/** The program that turns a Dockerfile and a context directory into an image, as found on this machine (containers/detect.ts). */
export type ResolvedBuilder = Found<BuilderKind>;

/**
 * Receives every line the builder prints, stdout and stderr alike, in order, as it comes.
 * A returned promise is awaited before the next line is passed (lines are never reordered).
 */
export type BuildLog = (line: string) => void | Promise<void>;

export type BuildErrorKind = 'failed' | 'aborted';

/**
 * An expected failure of a build or push: `message` says what failed and what to do.
 * `kind` is `aborted` when the caller's AbortSignal stopped it.
 */
export class BuildError extends Error {
  override name = 'BuildError';
  readonly kind: BuildErrorKind;

  constructor(message: string, kind: BuildErrorKind = 'failed', options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
  }
}
