/**
 * Rollback that holds (issue 21, item 2). A rollback is a redeploy of a revision that is
 * not the deployment's latest; it pins the deployment to the revision the redeploy makes,
 * and build on push (the GitHub webhook, the git poller, later previews) then records
 * pushes without making revisions. An explicit change that makes a revision (PATCH, POST
 * revisions) or POST …/unpin clears the pin.
 */
export interface Pin {
  revisionId: string;
  at: string;
}

/** What a deployment's row says of its pin and latest revision. */
export interface PinState {
  latest_revision_id: string | null;
  pinned_revision_id: string | null;
  pinned_at: string | null;
}

/**
 * The pin after a redeploy of `redeployedId` made `createdId`:
 * - of a revision that is not the latest: a rollback, pinned to the new revision from now;
 * - of the latest (a restart of what is there): the pin, if any, follows to the new
 *   revision (it runs the same thing) and keeps its time; an unpinned deployment stays so,
 *   since redeploying what the branch last built holds nothing back.
 */
export function pinAfterRedeploy(state: PinState, redeployedId: string, createdId: string, now: string): Pin | null {
  if (redeployedId !== state.latest_revision_id) return { revisionId: createdId, at: now };
  if (state.pinned_revision_id === null) return null;
  return { revisionId: createdId, at: state.pinned_at ?? now };
}

/** The event a push to a pinned deployment leaves instead of a revision. */
export function pushIgnoredMessage(commit: string, reason: string, pinnedRevisionId: string): string {
  return `Push ignored (${reason}): commit ${commit} was recorded but makes no revision while the deployment is pinned to revision ${pinnedRevisionId}; unpin it (POST …/unpin, or berth unpin) to follow the branch again.`;
}
