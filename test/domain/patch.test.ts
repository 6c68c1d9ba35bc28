import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  canonicalSource,
  completeResourceSpec,
  completeRevisionConfig,
  DEFAULT_GRAPH_CONFIG_PATH,
  givenRevisionFields,
  newSourceConfig,
  RESOURCE_SPEC_DEFAULTS,
  type RevisionConfig,
  sameJson,
  type SourceConfig,
} from '../../src/domain/deployment-config.js';
import { DomainError } from '../../src/domain/errors.js';
import { STATUS_BY_CODE } from '../../src/contract/errors.js';
import { type DeploymentState, planExplicitRevision, planPatch } from '../../src/domain/patch.js';
import { resolvePlacement } from '../../src/domain/placement.js';
import { RESERVED_SECRET_NAMES, sameSecrets, validateSecrets } from '../../src/domain/secrets.js';

const INTEGRATION = '11111111-1111-4111-8111-111111111111';
const LISTENER = '22222222-2222-4222-8222-222222222222';
const OTHER = '33333333-3333-4333-8333-333333333333';

/** Asserts a 400-kind DomainError whose message matches. */
function badRequest(fn: () => unknown, message?: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof DomainError, `expected a DomainError, got ${String(error)}`);
    assert.equal(STATUS_BY_CODE[error.code], 400, error.code);
    if (message) assert.match(error.message, message);
    return true;
  });
}

/**
 * Fixtures start from the module's own constructors, so fields added to these shapes later
 * get their defaults instead of breaking every fixture.
 */
function sourceConfig(overrides: Partial<SourceConfig> = {}): SourceConfig {
  return Object.assign(newSourceConfig('external_docker', null), overrides);
}

function revisionConfig(overrides: Partial<RevisionConfig> = {}): RevisionConfig {
  return Object.assign(completeRevisionConfig('external_docker', { image_uri: 'placeholder' }), { image_uri: null }, overrides);
}

/** An image deployment placed on a listener, as the store would describe it. */
function dockerState(overrides: Partial<DeploymentState> = {}): DeploymentState {
  return {
    name: 'agent',
    source: 'external_docker',
    sourceConfig: sourceConfig({ listener_id: LISTENER, listener_config: { k8s_namespace: 'agents' } }),
    revisionConfig: revisionConfig({ image_uri: 'registry/agent:v1', repo_commit_sha: null, tracked_packages: ['langgraph:1.0.0'] }),
    resourceSpec: { ...RESOURCE_SPEC_DEFAULTS },
    secrets: [
      { name: 'A', value: 'a' },
      { name: 'B', value: 'b' },
    ],
    latestImage: null,
    ...overrides,
  };
}

function codehostState(overrides: Partial<DeploymentState> = {}): DeploymentState {
  return {
    name: 'gh-agent',
    source: 'codehost',
    sourceConfig: sourceConfig({ integration_id: INTEGRATION, repo_url: 'https://github.com/acme/agent', deployment_type: 'dev' }),
    revisionConfig: revisionConfig({ repo_ref: 'main', graph_config_path: 'langgraph.json', repo_commit_sha: 'abc123' }),
    resourceSpec: { ...RESOURCE_SPEC_DEFAULTS },
    secrets: [],
    latestImage: null,
    ...overrides,
  };
}

// ---------------------------------------------------------------- planPatch

test('planPatch: an empty or all-null patch changes nothing and makes no revision', () => {
  const state = dockerState();
  for (const patch of [
    {},
    { name: null, source: null, display_name: null, image_version: null, source_config: null, source_revision_config: null, secrets: null },
    { source_config: { build_on_push: null, custom_url: null, resource_spec: null, listener_id: null, listener_config: null } },
    { source_revision_config: { repo_ref: null, graph_config_path: null, langgraph_config_path: null, image_uri: null } },
    { tracked_packages: null, revision_source: null },
  ]) {
    const plan = planPatch(state, patch);
    assert.equal(plan.revision, null, JSON.stringify(patch));
    assert.deepEqual(plan.sourceConfig, state.sourceConfig);
    assert.equal(plan.displayName, undefined);
    assert.equal(plan.imageVersion, undefined);
  }
});

test('planPatch: build_on_push, custom_url, install and build commands change in place', () => {
  const state = codehostState();
  const before = structuredClone(state);
  const plan = planPatch(state, {
    source_config: { build_on_push: true, custom_url: 'https://x', install_command: 'pip install .', build_command: 'make' },
  });
  assert.equal(plan.revision, null);
  assert.equal(plan.sourceConfig.build_on_push, true);
  assert.equal(plan.sourceConfig.custom_url, 'https://x');
  assert.equal(plan.sourceConfig.install_command, 'pip install .');
  assert.equal(plan.sourceConfig.build_command, 'make');
  assert.equal(plan.sourceConfig.integration_id, INTEGRATION);
  assert.deepEqual(state, before, 'the current state is not mutated');
  assert.equal(planPatch(state, { source_config: { build_on_push: false } }).sourceConfig.build_on_push, false, 'false is a value, not a null');
});

test('planPatch: display_name and image_version change in place', () => {
  const plan = planPatch(dockerState(), { display_name: 'Agent', image_version: '0.4.2' });
  assert.equal(plan.displayName, 'Agent');
  assert.equal(plan.imageVersion, '0.4.2');
  assert.equal(plan.revision, null);
});

test('planPatch: name, source and revision_source cannot change; equal values are accepted', () => {
  const state = codehostState();
  badRequest(() => planPatch(state, { name: 'renamed' }), /'name' cannot be changed/);
  badRequest(() => planPatch(state, { source: 'external_docker' }), /'source' cannot be changed/);
  badRequest(() => planPatch(state, { revision_source: 'internal_source' }), /'revision_source' cannot be changed/);
  for (const patch of [{ name: 'gh-agent' }, { source: 'codehost' }, { source: 'github' }, { revision_source: 'github' }]) {
    assert.equal(planPatch(state, patch).revision, null, JSON.stringify(patch));
  }
  badRequest(() => planPatch(dockerState(), { source: 'github' }));
  assert.equal(planPatch(dockerState(), { revision_source: 'external_docker' }).revision, null);
});

test('planPatch: integration_id, repo_url, deployment_type, listener_id and namespace are fixed; resending them is fine', () => {
  const gh = codehostState();
  badRequest(() => planPatch(gh, { source_config: { integration_id: OTHER } }), /integration_id/);
  badRequest(() => planPatch(gh, { source_config: { repo_url: 'https://github.com/acme/other' } }), /repo_url/);
  badRequest(() => planPatch(gh, { source_config: { deployment_type: 'prod' } }), /deployment_type/);
  const resend = planPatch(gh, {
    source_config: { integration_id: INTEGRATION, repo_url: 'https://github.com/acme/agent', deployment_type: 'dev' },
  });
  assert.equal(resend.revision, null);
  assert.deepEqual(resend.sourceConfig, gh.sourceConfig);

  const docker = dockerState();
  badRequest(() => planPatch(docker, { source_config: { listener_id: OTHER } }), /listener_id/);
  badRequest(() => planPatch(docker, { source_config: { listener_config: { k8s_namespace: 'other' } } }), /k8s_namespace/);
  const same = planPatch(docker, { source_config: { listener_id: LISTENER, listener_config: { k8s_namespace: 'agents' } } });
  assert.equal(same.revision, null);
  assert.deepEqual(same.sourceConfig.listener_config, { k8s_namespace: 'agents' });
  assert.equal(planPatch(docker, { source_config: { listener_config: { k8s_namespace: null } } }).revision, null);
});

test('planPatch: a revision field makes a revision merged over the latest one, without the old commit', () => {
  const state = codehostState();
  const plan = planPatch(state, { source_revision_config: { repo_ref: 'release' } });
  assert.ok(plan.revision);
  assert.deepEqual(plan.revision.config, revisionConfig({ repo_ref: 'release', graph_config_path: 'langgraph.json' }));
  assert.deepEqual(plan.revision.resourceSpec, state.resourceSpec);
  assert.deepEqual(plan.revision.secrets, state.secrets);

  const viaAlias = planPatch(state, { source_revision_config: { langgraph_config_path: 'sub/langgraph.json' } });
  assert.equal(viaAlias.revision?.config.graph_config_path, 'sub/langgraph.json');
  assert.equal(viaAlias.revision?.config.repo_ref, 'main');

  // Resending the same value still asks for a new build (the docs' CI flow does exactly that).
  assert.ok(planPatch(state, { source_revision_config: { repo_ref: 'main' } }).revision);
});

test('planPatch: image_uri makes a revision; tracked_packages go into it', () => {
  const state = dockerState();
  const plan = planPatch(state, { source_revision_config: { image_uri: 'registry/agent:v2' }, tracked_packages: ['google-adk:>=0.5'] });
  assert.ok(plan.revision);
  assert.equal(plan.revision.config.image_uri, 'registry/agent:v2');
  assert.deepEqual(plan.revision.config.tracked_packages, ['google-adk:>=0.5']);
  assert.deepEqual(plan.revision.secrets, state.secrets);
  const withoutPackages = planPatch(state, { source_revision_config: { image_uri: 'registry/agent:v3' }, tracked_packages: [] });
  assert.equal(withoutPackages.revision?.config.tracked_packages, null);
});

test('planPatch: revision fields must suit the source', () => {
  badRequest(() => planPatch(codehostState(), { source_revision_config: { image_uri: 'registry/agent:v2' } }), /image_uri/);
  badRequest(() => planPatch(dockerState(), { source_revision_config: { repo_ref: 'main' } }), /repo_ref/);
  badRequest(() => planPatch(dockerState(), { source_revision_config: { graph_config_path: 'langgraph.json' } }), /graph_config_path/);
  badRequest(
    () => planPatch(codehostState(), { source_revision_config: { graph_config_path: 'a.json', langgraph_config_path: 'b.json' } }),
    /langgraph_config_path/,
  );
});

test('planPatch: secrets [] count as omitted; the same secrets in any order make no revision; changed ones do', () => {
  const state = dockerState();
  assert.equal(planPatch(state, { secrets: [] }).revision, null);
  assert.equal(
    planPatch(state, {
      secrets: [
        { name: 'B', value: 'b' },
        { name: 'A', value: 'a' },
      ],
    }).revision,
    null,
  );

  const changedValue = planPatch(state, {
    secrets: [
      { name: 'A', value: 'a2' },
      { name: 'B', value: 'b' },
    ],
  });
  assert.deepEqual(changedValue.revision?.secrets, [
    { name: 'A', value: 'a2' },
    { name: 'B', value: 'b' },
  ]);
  assert.equal(changedValue.revision?.config.image_uri, 'registry/agent:v1');
  const fewer = planPatch(state, { secrets: [{ name: 'A', value: 'a' }] });
  assert.deepEqual(fewer.revision?.secrets, [{ name: 'A', value: 'a' }]);
  const renamed = planPatch(state, {
    secrets: [
      { name: 'A', value: 'a' },
      { name: 'C', value: 'b' },
    ],
  });
  assert.ok(renamed.revision);

  badRequest(
    () =>
      planPatch(state, {
        secrets: [
          { name: 'X', value: '1' },
          { name: 'X', value: '2' },
        ],
      }),
    /Duplicate secret name 'X'/,
  );
  badRequest(() => planPatch(state, { secrets: [{ name: 'LANGCHAIN_API_KEY', value: 'k' }] }), /reserved/);
});

test('planPatch: resource_spec equal after defaults makes no revision; a different one does and replaces it', () => {
  const state = dockerState({ resourceSpec: { ...RESOURCE_SPEC_DEFAULTS, labels: { team: 'a' } } });
  assert.equal(planPatch(state, { source_config: { resource_spec: { labels: { team: 'a' } } } }).revision, null);
  assert.equal(
    planPatch(state, { source_config: { resource_spec: { labels: { team: 'a' }, memory_mb: 2048, cpu: 1, min_scale: 1, max_scale: 1 } } }).revision,
    null,
  );
  const changed = planPatch(state, { source_config: { resource_spec: { max_scale: 3 } } });
  assert.deepEqual(changed.revision?.resourceSpec, { ...RESOURCE_SPEC_DEFAULTS, max_scale: 3 }, 'the whole spec is replaced');
  assert.equal(changed.revision?.config.image_uri, 'registry/agent:v1');
  badRequest(() => planPatch(state, { source_config: { resource_spec: { min_scale: 4, max_scale: 2 } } }), /min_scale/);
});

// ---------------------------------------------------------------- planExplicitRevision

test('planExplicitRevision: always a revision; absent fields copy the latest one', () => {
  const state = dockerState();
  const plan = planExplicitRevision(state, {});
  // The image is unchanged, so the packages it was built with carry over.
  assert.deepEqual(plan.config, { ...state.revisionConfig, repo_commit_sha: null });
  const newImage = planExplicitRevision(state, { source_revision_config: { image_uri: 'registry/agent:v9' } });
  assert.equal(newImage.config.tracked_packages, null, 'a new image does not inherit the old packages');
  assert.deepEqual(plan.resourceSpec, state.resourceSpec);
  assert.deepEqual(plan.secrets, state.secrets);
  assert.deepEqual(planExplicitRevision(state, { secrets: [], source_revision_config: null, resource_spec: null }).secrets, state.secrets);
});

test('planExplicitRevision: given fields, secrets, resources and packages are used', () => {
  const state = dockerState();
  const plan = planExplicitRevision(state, {
    source_revision_config: { image_uri: 'registry/agent:v2' },
    resource_spec: { cpu: 4 },
    secrets: [{ name: 'NEW', value: 'n' }],
    tracked_packages: ['langgraph:1.1.0'],
  });
  assert.equal(plan.config.image_uri, 'registry/agent:v2');
  assert.deepEqual(plan.config.tracked_packages, ['langgraph:1.1.0']);
  assert.deepEqual(plan.resourceSpec, { ...RESOURCE_SPEC_DEFAULTS, cpu: 4 });
  assert.deepEqual(plan.secrets, [{ name: 'NEW', value: 'n' }]);
  badRequest(() => planExplicitRevision(state, { secrets: [{ name: 'REDIS_URI', value: 'x' }] }), /reserved/);
  badRequest(() => planExplicitRevision(state, { source_revision_config: { repo_ref: 'main' } }));
  badRequest(() => planExplicitRevision(state, { resource_spec: { queue_min_scale: 3, queue_max_scale: 1 } }), /queue_min_scale/);
});

// ---------------------------------------------------------------- resolvePlacement

const listener = { id: LISTENER, namespaces: ['agents'] };

test('resolvePlacement: without a listener id', () => {
  badRequest(
    () => resolvePlacement({ requiresListener: true, listenerId: null, namespace: null, listener: undefined, availableListenerIds: [LISTENER, OTHER] }),
    new RegExp(
      `^Source configuration error: 'source_config.listener_id' is required for workspace with available listener IDs: \\['${LISTENER}', '${OTHER}'\\]$`,
    ),
  );
  assert.equal(
    resolvePlacement({ requiresListener: true, listenerId: null, namespace: null, listener: undefined, availableListenerIds: [] }),
    null,
    'a workspace without listeners needs no placement',
  );
  assert.equal(
    resolvePlacement({ requiresListener: false, listenerId: null, namespace: null, listener: undefined, availableListenerIds: [LISTENER] }),
    null,
    'a code-host deployment needs no listener',
  );
  badRequest(
    () => resolvePlacement({ requiresListener: false, listenerId: null, namespace: 'agents', listener: undefined, availableListenerIds: [] }),
    /listener_config/,
  );
});

test('resolvePlacement: with a listener id', () => {
  const base = { requiresListener: true, listenerId: LISTENER, availableListenerIds: [] as string[] };
  assert.deepEqual(resolvePlacement({ ...base, namespace: 'agents', listener }), { listenerId: LISTENER, namespace: 'agents' });
  assert.deepEqual(resolvePlacement({ ...base, namespace: null, listener }), { listenerId: LISTENER, namespace: 'agents' }, 'the only namespace is implied');
  badRequest(() => resolvePlacement({ ...base, namespace: 'elsewhere', listener }), /^Source configuration error: namespace 'elsewhere'/);
  badRequest(() => resolvePlacement({ ...base, namespace: 'agents', listener: undefined }), new RegExp(`^Source configuration error: listener ID ${LISTENER}`));
  badRequest(() => resolvePlacement({ ...base, namespace: null, listener: { id: LISTENER, namespaces: [] } }), /no namespaces/);
  badRequest(() => resolvePlacement({ ...base, namespace: null, listener: { id: LISTENER, namespaces: ['a', 'b'] } }), /k8s_namespace' is required/);
  assert.deepEqual(resolvePlacement({ ...base, namespace: 'b', listener: { id: LISTENER, namespaces: ['a', 'b'] } }), {
    listenerId: LISTENER,
    namespace: 'b',
  });
});

// ---------------------------------------------------------------- deployment-config

test('canonicalSource: github is codehost', () => {
  assert.equal(canonicalSource('github'), 'codehost');
  assert.equal(canonicalSource('codehost'), 'codehost');
  assert.equal(canonicalSource('external_docker'), 'external_docker');
});

test('givenRevisionFields: nulls are not given; the config-path alias folds into graph_config_path', () => {
  assert.deepEqual(givenRevisionFields(null), {});
  assert.deepEqual(givenRevisionFields(undefined), {});
  assert.deepEqual(givenRevisionFields({ repo_ref: null, graph_config_path: null, langgraph_config_path: null, image_uri: null }), {});
  assert.deepEqual(givenRevisionFields({ langgraph_config_path: 'a.json' }), { graph_config_path: 'a.json' });
  assert.deepEqual(givenRevisionFields({ graph_config_path: 'a.json' }), { graph_config_path: 'a.json' });
  assert.deepEqual(givenRevisionFields({ graph_config_path: 'a.json', langgraph_config_path: 'a.json', repo_ref: 'main' }), {
    graph_config_path: 'a.json',
    repo_ref: 'main',
  });
  assert.deepEqual(givenRevisionFields({ image_uri: 'r/x:1' }), { image_uri: 'r/x:1' });
  badRequest(() => givenRevisionFields({ graph_config_path: 'a.json', langgraph_config_path: 'b.json' }), /^Source configuration error/);
});

test('completeRevisionConfig: external_docker needs image_uri and takes no code-host fields', () => {
  assert.deepEqual(completeRevisionConfig('external_docker', { image_uri: 'r/x:1' }), revisionConfig({ image_uri: 'r/x:1' }));
  badRequest(() => completeRevisionConfig('external_docker', {}), /^Source configuration error: 'source_revision_config.image_uri' is required/);
  badRequest(() => completeRevisionConfig('external_docker', { image_uri: '' }), /image_uri/);
  badRequest(() => completeRevisionConfig('external_docker', { image_uri: 'r/x:1', repo_ref: 'main' }), /repo_ref/);
  badRequest(() => completeRevisionConfig('external_docker', { image_uri: 'r/x:1', graph_config_path: 'l.json' }), /graph_config_path/);
});

test('completeRevisionConfig: code host needs repo_ref, defaults the config path and takes no image', () => {
  assert.deepEqual(
    completeRevisionConfig('codehost', { repo_ref: 'main' }),
    revisionConfig({ repo_ref: 'main', graph_config_path: DEFAULT_GRAPH_CONFIG_PATH }),
  );
  assert.equal(DEFAULT_GRAPH_CONFIG_PATH, 'langgraph.json');
  assert.equal(completeRevisionConfig('codehost', { repo_ref: 'main', graph_config_path: 'x.json' }).graph_config_path, 'x.json');
  assert.equal(completeRevisionConfig('codehost', {}, { repoDefaultBranch: 'trunk' }).repo_ref, 'trunk');
  assert.equal(completeRevisionConfig('codehost', { repo_ref: 'dev' }, { repoDefaultBranch: 'trunk' }).repo_ref, 'dev');
  badRequest(() => completeRevisionConfig('codehost', {}), /^Source configuration error: 'source_revision_config.repo_ref' is required/);
  badRequest(() => completeRevisionConfig('codehost', { repo_ref: 'main', image_uri: 'r/x:1' }), /image_uri/);
  assert.deepEqual(
    completeRevisionConfig('codehost', { repo_ref: 'main', repo_commit_sha: 'abc', tracked_packages: ['a:1'] }),
    revisionConfig({ repo_ref: 'main', graph_config_path: 'langgraph.json', repo_commit_sha: 'abc', tracked_packages: ['a:1'] }),
  );
});

test('newSourceConfig: code host needs integration_id and repo_url; deployment_type defaults to prod', () => {
  const gh = newSourceConfig('codehost', { integration_id: INTEGRATION, repo_url: 'https://github.com/acme/agent', build_on_push: false });
  assert.deepEqual(gh, sourceConfig({ integration_id: INTEGRATION, repo_url: 'https://github.com/acme/agent', build_on_push: false }));
  assert.equal(gh.deployment_type, 'prod');
  assert.equal(newSourceConfig('codehost', { integration_id: INTEGRATION, repo_url: 'u', deployment_type: 'dev' }).deployment_type, 'dev');
  badRequest(() => newSourceConfig('codehost', { repo_url: 'u' }), /^Source configuration error: 'source_config.integration_id' is required/);
  badRequest(() => newSourceConfig('codehost', { integration_id: INTEGRATION }), /^Source configuration error: 'source_config.repo_url' is required/);
  badRequest(() => newSourceConfig('codehost', null), /integration_id/);
});

test('newSourceConfig: external_docker takes no code-host fields; nulls are accepted; the namespace is kept', () => {
  assert.deepEqual(newSourceConfig('external_docker', null), sourceConfig());
  assert.deepEqual(newSourceConfig('external_docker', { integration_id: null, repo_url: null, custom_url: null, deployment_type: null }), sourceConfig());
  badRequest(() => newSourceConfig('external_docker', { integration_id: INTEGRATION }), /integration_id/);
  badRequest(() => newSourceConfig('external_docker', { repo_url: 'u' }), /repo_url/);
  const placed = newSourceConfig('external_docker', { listener_id: LISTENER, listener_config: { k8s_namespace: 'agents' }, deployment_type: 'dev_free' });
  assert.equal(placed.listener_id, LISTENER);
  assert.deepEqual(placed.listener_config, { k8s_namespace: 'agents' });
  assert.equal(placed.deployment_type, 'dev_free');
  assert.equal(newSourceConfig('external_docker', { listener_config: { k8s_namespace: null } }).listener_config, null);
});

test('completeResourceSpec: defaults fill what is absent or null; other fields are kept; bounds are checked', () => {
  assert.deepEqual(RESOURCE_SPEC_DEFAULTS, { min_scale: 1, max_scale: 1, cpu: 1, memory_mb: 2048 });
  assert.deepEqual(completeResourceSpec(undefined), RESOURCE_SPEC_DEFAULTS);
  assert.deepEqual(completeResourceSpec(null), RESOURCE_SPEC_DEFAULTS);
  assert.deepEqual(completeResourceSpec({}), RESOURCE_SPEC_DEFAULTS);
  assert.deepEqual(completeResourceSpec({ cpu: null, queue_cpu: null }), RESOURCE_SPEC_DEFAULTS);
  assert.deepEqual(completeResourceSpec({ max_scale: 4, executor_cpu: 2, labels: { a: 'b' } }), {
    ...RESOURCE_SPEC_DEFAULTS,
    max_scale: 4,
    executor_cpu: 2,
    labels: { a: 'b' },
  });
  assert.deepEqual(completeResourceSpec({ min_scale: 2, max_scale: 2 }), { ...RESOURCE_SPEC_DEFAULTS, min_scale: 2, max_scale: 2 });
  badRequest(() => completeResourceSpec({ min_scale: 2 }), /'resource_spec.min_scale' \(2\) is greater than 'resource_spec.max_scale' \(1\)/);
  badRequest(() => completeResourceSpec({ queue_min_scale: 2, queue_max_scale: 1 }), /queue_min_scale/);
  badRequest(() => completeResourceSpec({ orchestrator_min_scale: 3, orchestrator_max_scale: 1 }), /orchestrator_min_scale/);
  const input = { cpu: 2 };
  completeResourceSpec(input);
  assert.deepEqual(input, { cpu: 2 }, 'the input is not mutated');
});

test('sameJson: key order does not matter; array order and values do', () => {
  assert.ok(sameJson({ a: 1, b: { c: [1, 2], d: null } }, { b: { d: null, c: [1, 2] }, a: 1 }));
  assert.ok(!sameJson({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!sameJson({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!sameJson({ a: 1 }, { a: '1' }));
  assert.ok(sameJson([], []));
});

// ---------------------------------------------------------------- secrets

test('validateSecrets: unique, non-reserved names pass', () => {
  validateSecrets([]);
  validateSecrets([
    { name: 'OPENAI_API_KEY', value: 'x' },
    { name: 'LANGSMITH_API_KEY', value: 'y' },
    { name: 'PORT', value: '1' },
  ]);
});

test('validateSecrets: duplicates and every always-reserved name are rejected; the message never carries the value', () => {
  const value = 'very-secret-value-123';
  badRequest(
    () =>
      validateSecrets([
        { name: 'X', value },
        { name: 'X', value: `${value}-2` },
      ]),
    /^Duplicate secret name 'X'/,
  );
  assert.throws(
    () =>
      validateSecrets([
        { name: 'X', value },
        { name: 'X', value },
      ]),
    (error: Error) => !error.message.includes(value),
  );
  const alwaysReserved = [
    'LANGCHAIN_TRACING_V2',
    'LANGSMITH_TRACING_V2',
    'LANGCHAIN_ENDPOINT',
    'LANGCHAIN_PROJECT',
    'LANGSMITH_PROJECT',
    'LANGSMITH_LANGGRAPH_GIT_REPO',
    'LANGGRAPH_GIT_REPO_PATH',
    'LANGCHAIN_API_KEY',
    'LANGSMITH_CONTROL_PLANE_API_KEY',
    'POSTGRES_URI',
    'POSTGRES_PASSWORD',
    'DATABASE_URI',
    'LANGSMITH_LANGGRAPH_GIT_REF',
    'LANGSMITH_LANGGRAPH_GIT_REF_SHA',
    'LANGGRAPH_AUTH_TYPE',
    'LANGSMITH_AUTH_ENDPOINT',
    'LANGSMITH_TENANT_ID',
    'LANGSMITH_AUTH_VERIFY_TENANT_ID',
    'LANGSMITH_HOST_PROJECT_ID',
    'LANGSMITH_HOST_PROJECT_NAME',
    'LANGSMITH_HOST_REVISION_ID',
    'LOG_JSON',
    'LOG_DICT_TRACEBACKS',
    'REDIS_URI',
    'LANGCHAIN_CALLBACKS_BACKGROUND',
    'DD_TRACE_PSYCOPG_ENABLED',
    'DD_TRACE_REDIS_ENABLED',
    'LANGSMITH_DEPLOYMENT_NAME',
    'LANGGRAPH_CLOUD_LICENSE_KEY',
  ];
  assert.deepEqual([...RESERVED_SECRET_NAMES].sort(), [...alwaysReserved].sort());
  for (const name of alwaysReserved) {
    assert.throws(
      () =>
        validateSecrets([
          { name: 'FINE', value: 'f' },
          { name, value },
        ]),
      (error: unknown) =>
        error instanceof DomainError && error.code === 'secrets_invalid' && error.message.includes(`'${name}'`) && !error.message.includes(value),
      name,
    );
  }
});

test('sameSecrets: same names and values in any order', () => {
  const a = [
    { name: 'A', value: '1' },
    { name: 'B', value: '2' },
  ];
  assert.ok(
    sameSecrets(a, [
      { name: 'B', value: '2' },
      { name: 'A', value: '1' },
    ]),
  );
  assert.ok(sameSecrets([], []));
  assert.ok(!sameSecrets(a, [{ name: 'A', value: '1' }]));
  assert.ok(
    !sameSecrets(a, [
      { name: 'A', value: '1' },
      { name: 'B', value: '3' },
    ]),
  );
  assert.ok(
    !sameSecrets(a, [
      { name: 'A', value: '1' },
      { name: 'C', value: '2' },
    ]),
  );
  assert.ok(!sameSecrets([{ name: 'A', value: '' }], [{ name: 'B', value: '' }]));
});
