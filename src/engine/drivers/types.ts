import type { GitAuth } from '../../codehost/index.js';
import type { BuildInputs, RevisionBuild } from '../../domain/build-inputs.js';
import type { ImageToForget, StepContext } from '../../containers/driver.js';

/**
 * What the engine asks of the outside world. Each step of a revision calls one driver;
 * drivers know nothing of the database, statuses or leases.
 */

export { DriverError } from '../../containers/driver.js';
export type { ImageToForget, LogLevel, RunningRevision, RunRequest, RuntimeDriver, StepContext } from '../../containers/driver.js';
/** Where a revision's source comes from: a commit of a repository, or an uploaded archive. */
export type BuildSource = { kind: 'git'; url: string; ref: string; auth?: GitAuth } | { kind: 'archive'; path: string };

export interface BuildRequest {
  /** Whose build this is: each workspace builds in a store and caches of its own, and, with the deployment and revision ids, names the image (registry/image-names.ts). */
  workspaceId: string;
  deploymentId: string;
  deploymentName: string;
  revisionId: string;
  source: BuildSource;
  /** langgraph.json, relative to the source's root. */
  graphConfigPath: string;
  installCommand: string | null;
  buildCommand: string | null;
  /** The build step's timeout (the deployment's build_timeout_seconds, clamped): for a driver that hands the build elsewhere, which must stop it there too. */
  timeoutSeconds?: number;
  /** The revision's resource_spec: a driver that sizes each build (a runner's Kubernetes Job) reads cpu, memory_mb and their limits. */
  resourceSpec?: Record<string, unknown> | null;
}

export interface BuiltImage {
  image: string;
  /** The commit built, for a repository source. */
  commitSha: string | null;
  /** The image's id in the local store (what identifies it when it is removed; a name can move). */
  id?: string | null;
  /** Its manifest digest in the registry it was pushed to. */
  digest?: string | null;
  /** langgraph.json's `env` as read from the source (object or env file); for the container, never for logs. */
  env?: Record<string, string>;
  /** The build's inputs and key, when the driver learnt them only while building (a build runner's report): kept on the revision for later reuse. */
  build?: RevisionBuild;
}

/** What a build of a request would be made from, worked out without building. */
export interface IdentifiedBuild {
  inputs: BuildInputs;
  /** langgraph.json's `env` as read from the source (object or env file); for the container, never for logs. */
  env: Record<string, string>;
}

/** Fetches a revision's source and builds it into an image. */
export interface BuildDriver {
  readonly name: string;
  /** Null when builds can run here; else what to install or change (checked once at start, to say so early). */
  unavailableReason?(): Promise<string | null>;
  build(request: BuildRequest, context: StepContext): Promise<BuiltImage>;
  /** Removes a built image from the stores the builder put it in (the registry is the engine's); nothing when it is not there. */
  forgetImage?(image: ImageToForget): Promise<void>;
  /**
   * The build's inputs (docs/architecture.md, "Builds that are not needed"): the commit a
   * ref names now or the archive's digest, langgraph.json, the build settings and the base
   * image's id. Throws when it cannot tell; the revision then simply builds. Drivers without
   * it always build.
   */
  identify?(request: BuildRequest, context: StepContext): Promise<IdentifiedBuild>;
  /** Whether an image this driver built is still there to run (in the local store or the registry). */
  imageExists?(image: string, signal: AbortSignal): Promise<boolean>;
}
