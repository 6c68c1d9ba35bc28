import { canonicalSource } from '../domain/deployment-config.js';
import { beingDeleted, deploymentNotFound, fail } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { UploadError, type UploadStore } from '../build/uploads.js';
import type { Db } from '../store/database.js';
import { findDeployment } from '../store/repositories/deployments.js';

export interface UploadUrl {
  upload_url: string;
  object_path: string;
}

/**
 * Source uploads for `langgraph deploy --remote` (real-clients.md 3.8): an upload URL on
 * Berth itself with a signed, single-use token that expires, the PUT that streams the
 * archive in, and the check that a PATCH's `source_tarball_path` came from such an upload.
 */
export function createUploadService({ db, uploads }: { db: Db; uploads: UploadStore }) {
  return {
    async issueUrl(scope: WorkspaceScope, deploymentId: string, base: string): Promise<UploadUrl> {
      const deployment = await findDeployment(db, scope.workspaceId, deploymentId);
      if (!deployment) throw deploymentNotFound(deploymentId);
      if (canonicalSource(deployment.source) !== 'internal_source') {
        throw fail('upload_not_available', `upload URL is only available for 'internal_source' source deployments (this one is '${deployment.source}').`);
      }
      if (deployment.status === 'AWAITING_DELETE') throw beingDeleted(deploymentId);
      const issued = await uploads.issue(deploymentId);
      return { upload_url: `${base}/v2/uploads/${deploymentId}?token=${encodeURIComponent(issued.token)}`, object_path: issued.objectPath };
    },

    /** Streams the archive to the data directory. No API key: the token is the authorisation. */
    async receive(
      deploymentId: string,
      token: string,
      body: NodeJS.ReadableStream,
      contentLength: number | undefined,
    ): Promise<{ object_path: string; size: number }> {
      try {
        const received = await uploads.receive(token, deploymentId, body, contentLength === undefined ? {} : { contentLength });
        return { object_path: received.objectPath, size: received.bytes };
      } catch (error) {
        if (!(error instanceof UploadError)) throw error;
        if (error.kind === 'forbidden') throw fail('upload_token_invalid', error.message);
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
