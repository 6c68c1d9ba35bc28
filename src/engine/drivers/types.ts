import type { GitAuth } from '../../codehost/index.js';
import type { BuildInputs } from '../../domain/build-inputs.js';

/**
 * What the engine asks of the outside world. Each step of a revision calls one driver;
 * drivers know nothing of the database, statuses or leases.
 */

export type LogLevel = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';

export interface StepContext {
  /** Aborted when the step's timeout passes, the lease is lost or the engine stops. */
  signal: AbortSignal;
  /** Writes a build or deploy log line of the revision (never pass secrets). */
  log(level: LogLevel, message: string): Promise<void>;
  /**
   * Says in the revision's `status_message` what the step waits for, its status unchanged
   * (null clears it). Absent where nobody reads the revision (quiet steps).
   */
  note?(message: string | null): Promise<void>;
}

/**
 * A failure a person can act on: `message` says what failed, why, and what to check.
 * Drivers throw it for expected failures; anything else is reported as an internal error.
 */
export class DriverError extends Error {
  override name = 'DriverError';
}

export interface RunRequest {
  deploymentId: string;
  revisionId: string;
  /** Short, readable name for the running instance (derived from the deployment name). */
  instanceName: string;
  image: string;
  /** Secrets and settings, passed as environment; never logged. */
  env: Record<string, string>;
  resources: { cpu?: number; memoryMb?: number };
  /** Credentials to pull the image with (an image in Berth's own registry); never logged. */
  pull?: { username: string; password: string; tlsVerify: boolean };
  /**
   * Names of `env` entries that only name the revision (its id): a standby instance started
   * for an earlier revision with the same image and otherwise the same environment (a
   * rollback's copy of that revision) may serve this one, keeping its own values of them.
   */
  revisionEnv?: string[];
  /** Extra labels for the instance (the listener agent marks its containers with its listener id). */
  labels?: Record<string, string>;
}

export interface RunningRevision {
  /** Where the revision serves; `GET {url}/ok` answered 200 before this was returned. */
  url: string;
  /** What `retire` needs to stop this instance later. */
  handle: string;
}

/** Runs revisions somewhere and removes them again. */
export interface RuntimeDriver {
  readonly name: string;
  /** Null when the driver can run revisions here; else what to install or change. */
  unavailableReason(): Promise<string | null>;
  /** Starts the revision and waits until it answers `GET /ok` with 200. */
  start(request: RunRequest, context: StepContext): Promise<RunningRevision>;
  /** Stops one instance started by `start`; succeeds if it is already gone. */
  retire(handle: string, context: StepContext): Promise<void>;
  /** Removes every instance of the deployment, including ones a crashed process left behind. */
  teardown(deploymentId: string, context: StepContext): Promise<void>;
  /**
   * Retires an instance another revision replaced, perhaps keeping it paused as a standby a
   * rollback to its revision resumes (`start` then finds it); true when it was kept. Drivers
   * without it retire.
   */
  park?(handle: string, context: StepContext): Promise<boolean>;
  /** Removes standby instances whose time has ended (the engine calls it at start and periodically). */
  sweepStandbys?(): Promise<string[]>;
  /** Removes a built image from the store the runtime runs images from (pulled there, or built into it); nothing when it is not there. */
  forgetImage?(image: ImageToForget): Promise<void>;
}

/** A built image whose revision is gone (engine/image-reaper.ts): removed where it still is what was built. */
export interface ImageToForget {
  workspaceId: string;
  deploymentId: string;
  /** The name it was built and pushed as. */
  image: string;
  /** Its id in the local store it was built into; a name that points at another image is left alone. */
  id: string | null;
}

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
