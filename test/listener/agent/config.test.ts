import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { AgentConfigError, loadAgentConfig } from '../../../src/agent/config.js';
import { backoffDelay } from '../../../src/agent/agent.js';

const KEY = 'lk_secret-value-never-shown';

test('the agent reads its settings from the environment; flags win; defaults fill the rest', () => {
  const config = loadAgentConfig({ BERTH_URL: 'https://berth.example.com/', BERTH_LISTENER_KEY: KEY }, { dataDir: '/var/lib/agent' });
  assert.deepEqual(config, {
    berthUrl: 'https://berth.example.com',
    listenerKey: KEY,
    dataDir: '/var/lib/agent',
    compute: { kind: 'container', runtime: 'auto', publishAddress: '127.0.0.1', publicHost: '127.0.0.1' },
    pollSeconds: 30,
    logLevel: 'info',
  });
  const flagged = loadAgentConfig(
    { BERTH_URL: 'http://a', BERTH_LISTENER_KEY: KEY, BERTH_LISTENER_RUNTIME: 'docker' },
    { url: 'http://b:8124', runtime: 'podman' },
  );
  assert.equal(flagged.berthUrl, 'http://b:8124');
  assert.deepEqual(flagged.compute, { kind: 'container', runtime: 'podman', publishAddress: '127.0.0.1', publicHost: '127.0.0.1' });
  assert.equal(flagged.dataDir, path.resolve('./berth-listener'));
});

test('the compute type picks a container host or a cluster, with their own settings', () => {
  const base = { BERTH_URL: 'http://a', BERTH_LISTENER_KEY: KEY };
  // The listener's compute_type names the runtime of a container host.
  assert.deepEqual(loadAgentConfig({ ...base, BERTH_LISTENER_RUNTIME: 'podman' }, { computeType: 'docker' }).compute, {
    kind: 'container',
    runtime: 'docker',
    publishAddress: '127.0.0.1',
    publicHost: '127.0.0.1',
  });
  // Published on every interface: users reach it by the host's name unless told otherwise.
  const wildcard = loadAgentConfig({ ...base, BERTH_LISTENER_PUBLISH_ADDRESS: '0.0.0.0' }).compute;
  assert.equal(wildcard.kind === 'container' ? wildcard.publicHost : '', os.hostname());
  const named = loadAgentConfig({ ...base, BERTH_LISTENER_PUBLISH_ADDRESS: '0.0.0.0', BERTH_LISTENER_PUBLIC_HOST: 'agents.internal' }).compute;
  assert.equal(named.kind === 'container' ? named.publicHost : '', 'agents.internal');
  assert.deepEqual(loadAgentConfig({ ...base, BERTH_LISTENER_COMPUTE_TYPE: 'k8s', BERTH_LISTENER_NAMESPACE: 'agents' }).compute, {
    kind: 'k8s',
    namespace: 'agents',
    resyncSeconds: 300,
  });
  assert.throws(
    () => loadAgentConfig({ ...base, BERTH_LISTENER_COMPUTE_TYPE: 'nomad', BERTH_LISTENER_PUBLISH_ADDRESS: '300.1.1.1', BERTH_LISTENER_NAMESPACE: 'Agents' }),
    (error: unknown) =>
      error instanceof AgentConfigError &&
      /BERTH_LISTENER_COMPUTE_TYPE is invalid/.test(error.message) &&
      /BERTH_LISTENER_PUBLISH_ADDRESS is invalid/.test(error.message) &&
      /BERTH_LISTENER_NAMESPACE is invalid/.test(error.message),
  );
});

test('every problem is named at once, and the key never appears', () => {
  assert.throws(
    () => loadAgentConfig({ BERTH_URL: 'ftp://nope', BERTH_LISTENER_RUNTIME: 'lxc' }),
    (error: unknown) =>
      error instanceof AgentConfigError &&
      /BERTH_URL is invalid \(got 'ftp:\/\/nope'\)/.test(error.message) &&
      /BERTH_LISTENER_KEY is required/.test(error.message) &&
      /BERTH_LISTENER_RUNTIME is invalid/.test(error.message),
  );
  assert.equal(loadAgentConfig({ BERTH_URL: 'http://a', BERTH_LISTENER_KEY: KEY, BERTH_LISTENER_POLL_SECONDS: ' 5 ' }).pollSeconds, 5);
  for (const bad of ['0', '61', '2.5', 'soon']) {
    assert.throws(
      () => loadAgentConfig({ BERTH_URL: 'http://a', BERTH_LISTENER_KEY: KEY, BERTH_LISTENER_POLL_SECONDS: bad }),
      /BERTH_LISTENER_POLL_SECONDS is invalid/,
    );
  }
  assert.throws(
    () => loadAgentConfig({ BERTH_URL: 'http://a', BERTH_LISTENER_KEY: KEY, LOG_LEVEL: 'loud' }),
    (error: unknown) => error instanceof AgentConfigError && /LOG_LEVEL is invalid/.test(error.message) && !error.message.includes(KEY),
  );
});

test('backoff grows exponentially with jitter and stays under its cap', () => {
  const settings = { baseMs: 1000, capMs: 30_000 };
  assert.equal(
    backoffDelay(0, settings, () => 0),
    500,
  );
  assert.equal(
    backoffDelay(0, settings, () => 1),
    1000,
  );
  assert.equal(
    backoffDelay(3, settings, () => 1),
    8000,
  );
  assert.equal(
    backoffDelay(50, settings, () => 1),
    30_000,
  );
  assert.equal(
    backoffDelay(50, settings, () => 0),
    15_000,
  );
});
