/**
 * Checked by `tsc` (npm test runs it), not run. The domain reads requests through input
 * types of its own, since it imports nothing of ours; they must name exactly the fields of
 * the contract, so that a field documented in the contract but unknown to the domain (and so
 * silently ignored) fails the type check.
 */
import type { Static } from 'typebox';
import type { PatchDeploymentInput, RevisionConfigInput, SourceConfigInput } from '../../src/contract/deployments.js';
import type * as domain from '../../src/domain/deployment-config.js';
import type { PatchInput } from '../../src/domain/patch.js';

type SameFields<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never]
  ? true
  : { onlyInContract: Exclude<keyof A, keyof B>; onlyInDomain: Exclude<keyof B, keyof A> };

export const fits: [
  SameFields<Static<typeof SourceConfigInput>, domain.SourceConfigInput>,
  SameFields<Static<typeof RevisionConfigInput>, domain.RevisionConfigInput>,
  SameFields<PatchDeploymentInput, PatchInput>,
] = [true, true, true];
