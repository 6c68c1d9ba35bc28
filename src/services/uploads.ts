import type { UploadUrlView } from '../contract/builds.js';
import { canonicalSource } from '../domain/deployment-config.js';
import { beingDeleted, deploymentNotFound, fail } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { type UploadLimits, uploadQuotaMessage, uploadQuotaRefusal } from '../domain/upload-quota.js';
import { UploadError, type UploadStore } from '../sources/uploads.js';
import { type Db, nowIso } from '../store/database.js';
import { findDeployment, findDeploymentById } from '../store/repositories/deployments.js';
import { recordChange } from './audit.js';
import {
  lockForUploadReservation,
  markUploadStored,
  pendingUploadBytes,
  releaseUploadArchives,
  saveUploadReservation,
} from '../store/repositories/upload-archives.js';

/** An upload URL whose deployment is deleted (or being deleted): it stores nothing any more. */
const uploadUrlGone = (deploymentId: string) =>
  fail('upload_url_gone', `This upload URL is no longer valid: deployment ${deploymentId} was deleted. Nothing was stored.`);

/**
 * Source uploads for `langgraph deploy --remote` (real-clients.md 3.8): an upload URL on
 * Berth itself with a signed, single-use token that expires, the PUT that streams the
 * archive in, and the check that a PATCH's `source_tarball_path` came from such an upload.
 * Pending archives are bounded per deployment and per workspace (domain/upload-quota.ts):
 * each upload reserves its bytes in the database before writing them, so concurrent
 * uploads, on any replica, cannot together pass a limit.
 */
export function createUploadService({ db, uploads, limits }: { db: Db; uploads: UploadStore; limits: UploadLimits }) {
  /** Reserves `bytes` in all for one upload, or refuses: 410 for a deleted deployment, 413 past a limit. */
  async function reserve(workspaceId: string, deploymentId: string, objectPath: string, bytes: number): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const status = await lockForUploadReservation(trx, workspaceId, deploymentId);
      if (status === undefined || status === 'AWAITING_DELETE') throw uploadUrlGone(deploymentId);
      await saveUploadReservation(trx, { objectPath, deploymentId, workspaceId, bytes, now: nowIso() });
      const refusal = uploadQuotaRefusal(await pendingUploadBytes(trx, workspaceId, deploymentId), limits);
      // Thrown inside the transaction, so the reservation just written is rolled back.
      if (refusal) throw fail('upload_quota_exceeded', uploadQuotaMessage(refusal, deploymentId));
    });
  }

  async function liveDeployment(deploymentId: string) {
    const deployment = await findDeploymentById(db, deploymentId);
    return deployment && deployment.status !== 'AWAITING_DELETE' ? deployment : undefined;
  }

  return {
    async issueUrl(scope: WorkspaceScope, deploymentId: string, base: string): Promise<UploadUrlView> {
      const deployment = await findDeployment(db, scope.workspaceId, deploymentId);
      if (!deployment) throw deploymentNotFound(deploymentId);
      if (canonicalSource(deployment.source) !== 'internal_source') {
        throw fail('upload_not_available', `upload URL is only available for 'internal_source' source deployments (this one is '${deployment.source}').`);
      }
      if (deployment.status === 'AWAITING_DELETE') throw beingDeleted(deploymentId);
      const issued = await uploads.issue(deploymentId);
      // A credential handed out is a change the audit log names, though no row of ours moves.
      await recordChange(db, scope, { action: 'deployment.upload_url_issue', target: { type: 'deployment', id: deployment.id, name: deployment.name } });
      return { upload_url: `${base}/v2/uploads/${deploymentId}?token=${encodeURIComponent(issued.token)}`, object_path: issued.objectPath };
    },

    /**
     * Streams the archive to the data directory. No API key: the token is the authorisation.
     * The URL dies with its deployment: once the deployment is deleted (or being deleted) the
     * PUT answers 410 and keeps nothing, also when the delete came while the archive streamed in.
     */
    async receive(
      deploymentId: string,
      token: string,
      body: NodeJS.ReadableStream,
      contentLength: number | undefined,
    ): Promise<{ object_path: string; size: number }> {
      let reserved = false;
      let objectPath: string | undefined;
      try {
        objectPath = uploads.verifyToken(token, deploymentId).objectPath;
        const deployment = await liveDeployment(deploymentId);
        if (!deployment) throw uploadUrlGone(deploymentId);
        const path = objectPath;
        const received = await uploads.receive(token, deploymentId, body, {
          ...(contentLength === undefined ? {} : { contentLength }),
          reserve: async (bytes) => {
            await reserve(deployment.workspace_id, deploymentId, path, bytes);
            reserved = true;
          },
        });
        await markUploadStored(db, received.objectPath, received.bytes, nowIso());
        // Deleted while the archive streamed in: its teardown may have run before the archive landed.
        if (!(await liveDeployment(deploymentId))) {
          await uploads.discard(received.objectPath);
          throw uploadUrlGone(deploymentId);
        }
        return { object_path: received.objectPath, size: received.bytes };
      } catch (error) {
        // The store removed what it wrote; what this upload reserved goes too (never another PUT's).
        if (reserved && objectPath) await releaseUploadArchives(db, [objectPath]);
        if (!(error instanceof UploadError)) throw error;
        if (error.kind === 'forbidden') throw fail('upload_token_invalid', error.message);
        if (!(await liveDeployment(deploymentId))) throw uploadUrlGone(deploymentId);
        if (error.kind === 'too_large') throw fail('body_too_large', error.message);
        throw fail('upload_invalid', error.message);
      }
    },

    /** 400 unless the archive came from this deployment's upload URL and is still there. */
    async checkTarball(deploymentId: string, objectPath: string): Promise<void> {
      if ((await uploads.resolve(deploymentId, objectPath)) === null) {
        throw fail(
          'tarball_unknown',
          `Source configuration error: 'source_revision_config.source_tarball_path' ('${objectPath}') was not uploaded for this deployment, ` +
            `or is gone; upload the archive through POST /v2/deployments/${deploymentId}/upload-url first.`,
        );
      }
    },
  };
}

export type UploadService = ReturnType<typeof createUploadService>;
