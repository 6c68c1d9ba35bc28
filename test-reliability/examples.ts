/**
 * A valid request body for each operation that takes one, so hostile variations start from
 * something that passes validation, and isolation requests reach the resource lookup.
 * Operations without an entry get a body generated from their schema (see hostile.test.ts).
 */
import { randomUUID } from 'node:crypto';

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(counter += 1)}`;

/** Secret values carry this marker, so logs, answers and tables can be searched for them. */
export const SECRET_MARKER = 'SECRETVALUE';
export const secretValue = () => `${SECRET_MARKER}-${randomUUID()}`;

const logQuery = () => ({
  limit: 10,
  order: 'asc',
  offset: null,
  level: 'INFO',
  query: 'started',
  start_time: '2020-01-01T00:00:00Z',
  end_time: '2100-01-01T00:00:00Z',
});

/** A real repository the example integrations list (set by the suite that needs one). */
export const exampleRepository = { path: '/nonexistent/acme/agent.git' };

export const EXAMPLE_BODIES: Record<string, () => Record<string, unknown>> = {
  'POST /v1/integrations/codehost': () => ({
    provider: 'git',
    name: `integration-${unique()}`,
    git: { repositories: [exampleRepository.path], username: 'berth', password: secretValue() },
  }),
  'POST /v2/deployments': () => ({
    name: `ex-${unique()}`,
    source: 'external_docker',
    source_config: { resource_spec: { cpu: 1, memory_mb: 256, labels: { team: 'a' } }, custom_url: 'https://x.example.com', install_command: 'npm ci' },
    source_revision_config: { image_uri: 'localhost/example:1' },
    secrets: [{ name: 'API_TOKEN', value: secretValue() }],
    image_version: '1.0.0',
  }),
  'PATCH /v2/deployments/{deployment_id}': () => ({
    display_name: `Example ${unique()}`,
    image_version: '2.0.0',
    source_config: { custom_url: 'https://y.example.com', build_command: 'make', resource_spec: { cpu: 2, annotations: { a: 'b' } } },
    source_revision_config: { image_uri: `localhost/example:${unique()}` },
    secrets: [{ name: 'API_TOKEN', value: secretValue() }],
    tracked_packages: ['langgraph'],
    previews: { max_previews: 2, secret_names: ['API_TOKEN'], idle_minutes: 60 },
  }),
  'POST /v1/runner/jobs/claim': () => ({ labels: [], wait: 0 }),
  'POST /v1/runner/jobs/{job_id}/heartbeat': () => ({ lease_token: `lease-${unique()}` }),
  'POST /v1/runner/jobs/{job_id}/logs': () => ({ lease_token: `lease-${unique()}`, seq: 0, lines: [{ level: 'INFO', message: 'step 1' }] }),
  'POST /v1/runner/jobs/{job_id}/inputs': () => ({
    lease_token: `lease-${unique()}`,
    inputs: {
      source: `commit:${'a'.repeat(40)}`,
      commit_sha: 'a'.repeat(40),
      graph_config_path: 'langgraph.json',
      graph_config_sha256: 'b'.repeat(64),
      base_image: 'langchain/langgraphjs-api:20',
      base_image_digest: 'c'.repeat(64),
      generator_version: 1,
    },
  }),
  'POST /v1/runner/jobs/{job_id}/result': () => ({ lease_token: `lease-${unique()}`, status: 'failed', message: 'no' }),
  'PATCH /v2/deployments/{deployment_id}/secrets': () => ({ set: [{ name: 'API_TOKEN', value: secretValue() }], remove: ['OLD_TOKEN'] }),
  'POST /v2/deployments/{deployment_id}/revisions': () => ({
    source_revision_config: { image_uri: `localhost/example:${unique()}` },
    source_config: { resource_spec: { memory_mb: 512 }, install_command: 'pip install .' },
    secrets: [{ name: 'API_TOKEN', value: secretValue() }],
    tracked_packages: ['langgraph'],
  }),
  'POST /v2/listeners': () => ({ compute_type: 'k8s', compute_id: `cluster-${unique()}`, compute_config: { k8s_namespaces: ['ns-a'] }, version: '1.0' }),
  'PUT /v2/listeners/{listener_id}/runner-labels': () => ({ labels: ['linux', 'gpu'] }),
  'PUT /v1/workspaces/{workspace_id}/runner-labels': () => ({ labels: ['linux'] }),
  'PATCH /v2/listeners/{listener_id}': () => ({ version: `v-${unique()}`, compute_config: { k8s_namespaces: ['ns-a', 'ns-b'] } }),
  'POST /v2/auth/providers': () => ({
    provider_id: `prov-${unique()}`,
    name: 'Example provider',
    client_id: 'client-id',
    client_secret: secretValue(),
    auth_url: 'https://auth.example.com/authorize',
    token_url: 'https://auth.example.com/token',
    uses_pkce: true,
    code_challenge_method: 'S256',
    provider_type: 'oauth2',
  }),
  'PATCH /v2/auth/providers/{provider_id}': () => ({ name: `Renamed ${unique()}`, client_secret: secretValue(), auth_url: 'https://auth2.example.com/a' }),
  'POST /v1/listener-protocol/reports': () => ({
    revisions: [
      { deployment_id: randomUUID(), revision_id: randomUUID(), status: 'DEPLOYED', url: 'http://10.0.0.1:8000', logs: [{ level: 'INFO', message: 'ready' }] },
    ],
    deletions: [{ deployment_id: randomUUID() }],
  }),
  'POST /v1/listener-protocol/heartbeat': () => ({ version: `agent-${unique()}` }),
  'POST /v1/workspaces': () => ({ name: `ws-${unique()}` }),
  // A public address (no DNS needed) and an event nothing sends yet: no delivery leaves the machine.
  'POST /v1/webhook-subscriptions': () => ({ url: `http://93.184.215.14/hooks/${unique()}`, events: ['listener.offline'], description: 'isolation' }),
  'POST /v1/api-keys': () => ({ name: `key-${unique()}`, role: 'member', workspace_id: null }),
  'POST /v1/sessions': () => ({}),
  'POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs': logQuery,
  'POST /v1/projects/{deployment_id}/revisions/{revision_id}/deploy_logs': logQuery,
  'POST /v1/projects/{deployment_id}/deploy_logs': logQuery,
};
