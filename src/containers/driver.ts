/**
 * What a runtime is asked to run revisions, and how its failures are told: the port the
 * engine runs revisions through (engine/drivers/types.ts re-exports it beside the build
 * driver's), implemented by the local runtime (runtime/) the engine and the agent share.
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
