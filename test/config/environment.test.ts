import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { AGENT_ENVIRONMENT } from '../../src/agent/config.js';
import { loadRunnerConfig, RUNNER_SHARED_DEFAULTS, RUNNER_SHARED_VARIABLES, RUNNER_VARIABLES } from '../../src/runner/config.js';
import { KUBERNETES_BUILD_VARIABLES } from '../../src/runner/kubernetes/config.js';
import { ENVIRONMENT } from '../../src/environment.js';
import { configurationTable } from '../../scripts/config-table.js';

test("the README's configuration table is the environment schema written out (npm run docs:config)", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  assert.ok(readme.includes(configurationTable()), 'README.md is out of date: run `npm run docs:config`, which writes its configuration table');
});

/** The BERTH_ names written in the sources under `paths` (grep's own exclusions aside). */
async function namedIn(paths: string[], exclude: string[] = []): Promise<string[]> {
  const { execFileSync } = await import('node:child_process');
  const args = ['-rhoE', '\\bBERTH_[A-Z0-9_]+', ...exclude.map((dir) => `--exclude-dir=${dir}`), ...paths];
  return [...new Set(execFileSync('grep', args, { encoding: 'utf8' }).split('\n').filter(Boolean))];
}

test('every variable the server reads is in the schema: the sources name no BERTH_ variable it lacks', async () => {
  // The listener agent and the CLI are other programs with settings of their own (below).
  const named = await namedIn(['src'], ['cli', 'agent', 'runner']);
  const runnerVariables: readonly string[] = [...RUNNER_VARIABLES, ...KUBERNETES_BUILD_VARIABLES];
  // Paths and constants that merely start with the prefix.
  // And the CLI's key variable, which the start-up banner (src/startup-guide.ts) tells a person to set.
  const notVariables = new Set(['BERTH_CONTAINERS_CONF', 'BERTH_REGISTRIES_CONF', 'BERTH_API_KEY']);
  // src/main.ts names the agent's and the build runner's variables in their --help.
  const missing = named.filter(
    (name) => !notVariables.has(name) && !(name in ENVIRONMENT.properties) && !(name in AGENT_ENVIRONMENT.properties) && !runnerVariables.includes(name),
  );
  assert.deepEqual(missing, []);
});

test("the listener agent's variables are all in its own schema, and none of them is the server's", async () => {
  const named = await namedIn(['src/agent']);
  assert.deepEqual(
    named.filter((name) => !(name in AGENT_ENVIRONMENT.properties)),
    [],
  );
  assert.deepEqual(
    Object.keys(AGENT_ENVIRONMENT.properties).filter((name) => name.startsWith('BERTH_') && name in ENVIRONMENT.properties),
    [],
  );
});

test("the build runner's variables are all in its own list, and none of them is the server's", async () => {
  const runnerVariables: readonly string[] = [...RUNNER_VARIABLES, ...KUBERNETES_BUILD_VARIABLES];
  assert.deepEqual(
    (await namedIn(['src/runner'])).filter((name) => !runnerVariables.includes(name)),
    [],
  );
  const shared: readonly string[] = RUNNER_SHARED_VARIABLES;
  assert.deepEqual(
    runnerVariables.filter((name) => name.startsWith('BERTH_') && name in ENVIRONMENT.properties && !shared.includes(name)),
    [],
  );
});

test("the variables the build runner shares with the server are the server's, with its defaults", () => {
  const properties = ENVIRONMENT.properties as Record<string, { default?: unknown }>;
  for (const name of RUNNER_SHARED_VARIABLES) assert.ok(name in properties, `${name} is the server's`);
  for (const [name, value] of Object.entries(RUNNER_SHARED_DEFAULTS)) assert.equal(properties[name]?.default, value, name);
  const base = { BERTH_URL: 'http://berth.example', BERTH_RUNNER_KEY: 'berth_key' };
  const server = loadConfig({}).build.sandbox;
  assert.deepEqual(loadRunnerConfig(base).sandbox, server, 'on by default, with the same settings');
  assert.equal(loadRunnerConfig({ ...base, BERTH_BUILD_SANDBOX: 'OFF' }).sandbox, undefined);
  assert.throws(
    () => loadRunnerConfig({ ...base, BERTH_BUILD_SANDBOX: 'maybe', BERTH_BUILD_MEMORY_MB: '64', BERTH_BUILD_DENY_NETWORKS: '10.0.0.0' }),
    (error: Error) =>
      ['BERTH_BUILD_SANDBOX', 'BERTH_BUILD_MEMORY_MB must be an integer of at least 128', 'BERTH_BUILD_DENY_NETWORKS'].every((part) =>
        error.message.includes(part),
      ),
  );
});

test('defaults fill in unset and empty variables; values are trimmed and choices read in any case', () => {
  const config = loadConfig({ PORT: ' 9000 ', BERTH_ENGINE: 'OFF', BERTH_ENGINE_CONCURRENCY: '', LOG_LEVEL: 'Debug' });
  assert.equal(config.port, 9000);
  assert.equal(config.engine.enabled, false);
  assert.equal(config.engine.concurrency, 4);
  assert.equal(config.logLevel, 'debug');
  assert.equal(config.limits.rateLimitPerMinute, 6000);
  assert.equal(loadConfig({ BERTH_REGISTRY: '127.0.0.1:5000' }).registry?.tlsVerify, false, 'a registry on this machine is plain HTTP by default');
  assert.equal(loadConfig({ BERTH_REGISTRY: 'registry.example.com' }).registry?.tlsVerify, true);
});

test('every problem is reported at once, naming the variable, and secret values never appear', () => {
  const secret = 'mysql://admin:hunter2-very-secret@db/berth';
  const failure = (() => {
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', DATABASE_URL: secret, BERTH_BOOTSTRAP_API_KEY: 'short-secret-key', BERTH_ENGINE_CONCURRENCY: '0' });
    } catch (error) {
      return error;
    }
    return undefined;
  })();
  assert.ok(failure instanceof ConfigError, String(failure));
  for (const name of ['PORT', 'LOG_LEVEL', 'DATABASE_URL', 'BERTH_BOOTSTRAP_API_KEY', 'BERTH_ENGINE_CONCURRENCY'])
    assert.match(failure.message, new RegExp(`- ${name} `));
  assert.match(failure.message, /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got 'loud'\)/);
  assert.ok(!failure.message.includes('hunter2') && !failure.message.includes('short-secret-key'), failure.message);
  assert.throws(() => loadConfig({ BERTH_TRUSTED_PROXIES: '10.0.0.0/8, not-an-address' }), /BERTH_TRUSTED_PROXIES .*not-an-address/);
  assert.throws(() => loadConfig({ BERTH_REGISTRY: 'r.example.com', BERTH_REGISTRY_TOKEN_KEY_FILE: '/k.pem' }), /go together/);
});
