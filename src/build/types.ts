/** The programs that can turn a Dockerfile and a context directory into an image. */
export type BuilderKind = 'buildah' | 'podman' | 'docker';

/** `auto` takes the first usable of buildah, `podman build`, `docker build` (BERTH_BUILDER). */
export type BuilderPreference = 'auto' | BuilderKind;

export interface ResolvedBuilder {
  kind: BuilderKind;
  /** Absolute path of the program. */
  binary: string;
  /** The environment it runs with (for buildah and podman, the Berth containers.conf). */
  env: NodeJS.ProcessEnv;
  /** Arguments before the subcommand: the build sandbox's storage of one workspace. */
  globalArgs?: readonly string[];
  /** Runs the program as this unprivileged user (the build sandbox's) instead of as Berth. */
  runAs?: { uid: number; gid: number };
}

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
