import { canonicalSource } from '../domain/deployment-config.js';
import { deploymentNotFound, fail } from '../domain/errors.js';
import type { WorkspaceScope } from '../domain/tenancy.js';
import { deploymentPushTarget } from '../registry/image-names.js';
import type { Registry } from '../registry/setup.js';
import type { Db } from '../store/database.js';
import { findDeployment } from '../store/repositories/deployments.js';
import { recordChange } from './audit.js';

/**
 * `langgraph deploy` with a local build: a short-lived credential for `docker login -u
 * oauth2accesstoken` that may push only below the deployment's own path of Berth's
 * registry, `<prefix>/<workspace id>/<deployment id>/*` (real-clients.md 3.7, docs/registry.md).
 */
export function createPushTokenService({ db, registry }: { db: Db; registry: Registry | undefined }) {
  return {
    async issue(scope: WorkspaceScope, deploymentId: string): Promise<{ token: string; registry_url: string }> {
      const deployment = await findDeployment(db, scope.workspaceId, deploymentId);
      if (!deployment) throw deploymentNotFound(deploymentId);
      // The CLI looks for exactly this wording.
      if (canonicalSource(deployment.source) !== 'internal_docker') {
        throw fail('push_token_not_available', `push token is only available for 'internal_docker' source deployments (this one is '${deployment.source}').`);
      }
      if (!registry) {
        throw fail('registry_not_configured', 'This Berth has no image registry to push to: its operator sets BERTH_REGISTRY (see docs/registry.md).');
      }
      const target = deploymentPushTarget(registry.settings.location, deployment.workspace_id, deployment.id);
      const token = await registry.pushCredential(`deployment:${deployment.id}`, target.repositoryGrant);
      // A credential handed out is a change the audit log names, though no row of ours moves.
      await recordChange(db, scope, { action: 'deployment.push_token_issue', target: { type: 'deployment', id: deployment.id, name: deployment.name } });
      return { token, registry_url: target.registryUrl };
    },
  };
}
