import { providerFor } from '../codehost/index.js';
import { canonicalSource } from '../domain/deployment-config.js';
import { decryptCredentials } from '../security/integration-credentials.js';
import type { DeploymentRecord } from '../store/repositories/deployments.js';
import { findIntegrationById } from '../store/repositories/integrations.js';
import type { RevisionRecord } from '../store/repositories/revisions.js';
import type { WorkContext } from './context.js';
import { type BuildSource, DriverError } from './drivers/types.js';

/**
 * What the build step fetches: the commit of the deployment's repository that the
 * revision names, with the credentials its integration gives for that repository.
 */
export async function buildSource(ctx: WorkContext, deployment: DeploymentRecord, revision: RevisionRecord): Promise<BuildSource> {
  const tarball = revision.source_revision_config.source_tarball_path;
  if (canonicalSource(revision.source) === 'internal_source' && tarball) {
    const path = await ctx.uploads.resolve(deployment.id, tarball);
    if (!path) throw new DriverError(`the uploaded archive ${tarball} is no longer there (an archive is kept until its build); upload the project again.`);
    return { kind: 'archive', path };
  }
  const { integration_id: integrationId, repo_url: repoUrl } = deployment.source_config;
  const ref = revision.source_revision_config.repo_ref;
  if (!integrationId || !repoUrl || !ref) {
    throw new DriverError('the revision names no repository to build (source_config.integration_id, repo_url and repo_ref are needed).');
  }
  const integration = await findIntegrationById(ctx.db, integrationId);
  if (!integration) throw new DriverError(`integration ${integrationId} no longer exists; create the deployment again with an existing integration.`);
  const provider = providerFor(
    { ...integration, credentials: decryptCredentials(ctx.encryptor, integration.id, integration.credentials_encrypted) },
    ctx.codehost,
  );
  const auth = await provider.cloneAuth(repoUrl, { signal: AbortSignal.timeout(60_000) });
  return { kind: 'git', url: repoUrl, ref, ...(auth ? { auth } : {}) };
}
