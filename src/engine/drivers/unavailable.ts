import { type BuildDriver, type BuiltImage, DriverError, type RunningRevision, type RuntimeDriver } from './types.js';

/** Configured with BERTH_BUILDER=none: this server builds nothing, and says what to do instead. */
export class UnavailableBuildDriver implements BuildDriver {
  readonly name = 'none';

  async build(): Promise<BuiltImage> {
    throw new DriverError(
      'this Berth server does not build images (BERTH_BUILDER=none). Set BERTH_BUILDER=auto with buildah, podman or docker installed, ' +
        "or build the image yourself and create an 'external_docker' deployment with source_revision_config.image_uri.",
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
