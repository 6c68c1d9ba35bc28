import { type BuildDriver, type BuiltImage, DriverError, type RunningRevision, type RuntimeDriver } from './types.js';

/** Used until Berth can build from a code host: fails the build step and says what to do instead. */
export class UnavailableBuildDriver implements BuildDriver {
  readonly name = 'none';

  async build(): Promise<BuiltImage> {
    throw new DriverError(
      'Berth cannot build from a code-host repository yet. Build the image yourself and create an ' +
        "'external_docker' deployment with source_revision_config.image_uri, or run the build in your CI.",
    );
  }
}

/** Configured with BERTH_CONTAINER_RUNTIME=none: nothing runs here; deployments must go to listeners. */
export class NoRuntime implements RuntimeDriver {
  readonly name = 'none';

  async unavailableReason(): Promise<string> {
    return (
      'No container runtime is configured on this Berth server (BERTH_CONTAINER_RUNTIME=none). ' +
      'Set BERTH_CONTAINER_RUNTIME=auto with podman or docker installed, or place the deployment on a listener (source_config.listener_id).'
    );
  }

  async start(): Promise<RunningRevision> {
    throw new DriverError(await this.unavailableReason());
  }

  async retire(): Promise<void> {}

  async teardown(): Promise<void> {}
}
