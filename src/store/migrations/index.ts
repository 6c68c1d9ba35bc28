import type { Migration, MigrationProvider } from 'kysely';
import { initialSchema } from './001-initial-schema.js';
import { engineSchema } from './002-engine.js';
import { listingIndex } from './003-listing-index.js';
import { workspaceNameCaseInsensitive } from './004-workspace-name-ci.js';
import { revisionInputs } from './005-revision-inputs.js';
import { codehost } from './006-codehost.js';
import { deploymentResources } from './007-deployment-resources.js';
import { listenerProtocol } from './008-listener-protocol.js';
import { nameSearch } from './009-name-search.js';
import { uploadArchives } from './010-upload-archives.js';
import { resourceNames } from './011-resource-names.js';
import { idempotencyKeys } from './012-idempotency-keys.js';
import { engineTurns } from './013-engine-turns.js';
import { imageRemovals } from './014-image-removals.js';
import { keyRoles } from './015-key-roles.js';
import { auditLog } from './016-audit-log.js';
import { buildInputs } from './017-build-inputs.js';
import { deploymentPins } from './018-deployment-pins.js';
import { outboundWebhooks } from './019-outbound-webhooks.js';
import { sessions } from './020-sessions.js';
import { buildJobs } from './021-build-jobs.js';
import { githubNotices } from './022-github-notices.js';
import { previews } from './023-previews.js';
import { runnerLabels } from './024-runner-labels.js';
import { auditActorReason } from './025-audit-actor-reason.js';
import { githubNoticeRefusals } from './026-github-notice-refusals.js';
import { eventIdFence } from './027-event-id-fence.js';
import { buildJobRelay } from './028-build-job-relay.js';
import { buildJobAnswered } from './029-build-job-answered.js';
import { buildJobInputs } from './030-build-job-inputs.js';
import { githubNoticePositions } from './031-github-notice-positions.js';
import { pendingWorkByWorkspace } from './032-pending-work-by-workspace.js';

/** Ordered migrations; the same list runs on SQLite and PostgreSQL. Never edit a landed one. */
const migrations: Record<string, Migration> = {
  '001-initial-schema': initialSchema,
  '002-engine': engineSchema,
  '003-listing-index': listingIndex,
  '004-workspace-name-ci': workspaceNameCaseInsensitive,
  '005-revision-inputs': revisionInputs,
  '006-codehost': codehost,
  '007-deployment-resources': deploymentResources,
  '008-listener-protocol': listenerProtocol,
  '009-name-search': nameSearch,
  '010-upload-archives': uploadArchives,
  '011-resource-names': resourceNames,
  '012-idempotency-keys': idempotencyKeys,
  '013-engine-turns': engineTurns,
  '014-image-removals': imageRemovals,
  '015-key-roles': keyRoles,
  '016-audit-log': auditLog,
  '017-build-inputs': buildInputs,
  '018-deployment-pins': deploymentPins,
  '019-outbound-webhooks': outboundWebhooks,
  '020-sessions': sessions,
  '021-build-jobs': buildJobs,
  '022-github-notices': githubNotices,
  '023-previews': previews,
  '024-runner-labels': runnerLabels,
  '025-audit-actor-reason': auditActorReason,
  '026-github-notice-refusals': githubNoticeRefusals,
  '027-event-id-fence': eventIdFence,
  '028-build-job-relay': buildJobRelay,
  '029-build-job-answered': buildJobAnswered,
  '030-build-job-inputs': buildJobInputs,
  '031-github-notice-positions': githubNoticePositions,
  '032-pending-work-by-workspace': pendingWorkByWorkspace,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
