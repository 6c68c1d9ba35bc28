import { randomUUID } from 'node:crypto';
import { newSourceConfig } from '../../src/domain/deployment-config.js';
import type { NewDeployment } from '../../src/store/repositories/deployments.js';
import type { SubscriptionRecord } from '../../src/store/repositories/webhooks.js';
import type { Database } from '../../src/store/schema.js';

/** A new deployment for tests that write the store directly (through its repository); override what the test is about. */
export function deploymentRow(workspaceId: string, overrides: Partial<NewDeployment> = {}): NewDeployment {
  const id = overrides.id ?? randomUUID();
  return {
    id,
    workspace_id: workspaceId,
    name: `dep-${id.slice(0, 8)}`,
    display_name: null,
    source: 'external_docker',
    source_config: newSourceConfig('external_docker', {}),
    deployment_type: 'prod',
    listener_id: null,
    image_version: null,
    created_at: new Date().toISOString(),
    ...overrides,
  };
}

/**
 * A revision row in a status of the test's choosing, written as it is: for tests about
 * reading revisions in states the engine would take time to reach.
 */
export function revisionRow(deploymentId: string, seq: number, overrides: Partial<Database['revisions']> = {}): Database['revisions'] {
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    deployment_id: deploymentId,
    seq,
    source: 'external_docker',
    source_revision_config: '{}',
    resource_spec_id: null,
    secret_set_id: null,
    status: 'DEPLOYED',
    status_message: null,
    remote_reconciled: 0,
    image_id: null,
    image_digest: null,
    image_ref: null,
    runtime_handle: null,
    url: null,
    build_inputs: null,
    build_key: null,
    config_env_encrypted: null,
    created_at: now,
    updated_at: now,
    ...overrides,
  };
}

/** An enabled webhook subscription of the workspace (its secret a placeholder: nothing is sent to it). */
export function subscriptionRow(workspaceId: string, overrides: Partial<SubscriptionRecord> = {}): SubscriptionRecord {
  return {
    id: randomUUID(),
    workspace_id: workspaceId,
    url: 'https://receiver.example/hook',
    events: ['deployment.created', 'revision.status_changed'],
    secret_encrypted: 'sealed',
    description: null,
    created_at: new Date().toISOString(),
    failing_since: null,
    disabled_at: null,
    disabled_reason: null,
    ...overrides,
  };
}
