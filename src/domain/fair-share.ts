/**
 * Fair engine slots between workspaces (docs/security.md, "Fair engine slots"): how many
 * deployments of one workspace the engine works on at once, and the operator's ceiling on
 * the step timeouts a member may ask for.
 */

/**
 * Unless the operator says otherwise, a workspace may hold all of one process's slots but
 * one, so another workspace always finds a slot free, while a lone workspace keeps most of
 * the engine's throughput. With a single slot, sharing is impossible; it is the workspace's.
 */
export function defaultWorkspaceSlots(concurrency: number): number {
  return Math.max(1, concurrency - 1);
}

/** The status message of a revision that waits only for its workspace's share of the engine. */
export function waitingForShareMessage(share: number): string {
  return (
    `Waiting for an engine slot: this workspace's deployments already hold ${share} ` +
    `(its share, BERTH_ENGINE_WORKSPACE_SLOTS); it starts when one of them is done.`
  );
}

export interface StepTimeout {
  ms: number;
  /** Set when the deployment asked for more than the operator allows: what it asked for. */
  askedMs?: number;
}

/**
 * A step's timeout: the deployment's own (seconds; null or 0 for the default), else the
 * engine's default, never above the operator's maximum. Clamped rather than refused, so a
 * deployment stored before the maximum was set (or lowered) still runs, within the maximum,
 * and API-only replicas need not know the engine's settings.
 */
export function stepTimeout(requestedSeconds: number | null | undefined, defaultMs: number, maxSeconds: number): StepTimeout {
  const wanted = (requestedSeconds ?? 0) * 1000 || defaultMs;
  const maxMs = maxSeconds * 1000;
  return wanted <= maxMs ? { ms: wanted } : { ms: maxMs, askedMs: wanted };
}
