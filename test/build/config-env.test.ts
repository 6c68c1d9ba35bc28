import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envFilePath, envFromFile, envFromObject } from '../../src/langgraph-project/config-env.js';
import { parseLangGraphConfig } from '../../src/langgraph-project/langgraph-config.js';
import { buildKey, type BuildInputs, runEnvironment } from '../../src/domain/build-inputs.js';

const configWith = (env: unknown) => parseLangGraphConfig(JSON.stringify({ node_version: '20', graphs: { a: './a.ts:graph' }, env }));

test("an env object's values are what the CLI's str() makes of them; bad names are left out by name", () => {
  const config = parseLangGraphConfig('{"graphs": {"a": "./a.ts:graph"}, "env": {"A": "x", "B": true, "C": 1, "D": 1.0, "E": 2e-5, "bad name": "v"}}');
  assert.ok(config.env instanceof Map);
  const env = envFromObject(config.env);
  assert.deepEqual(env.variables, { A: 'x', B: 'True', C: '1', D: '1.0', E: '2e-05' });
  assert.deepEqual(env.skipped, ['"bad name"']);
});

test('an env file is found beside langgraph.json and never outside the project', () => {
  assert.equal(envFilePath(configWith('.env'), 'agent/langgraph.json'), 'agent/.env');
  assert.equal(envFilePath(configWith('../shared/.env'), 'agent/langgraph.json'), 'shared/.env');
  assert.equal(envFilePath(configWith('../.env'), 'langgraph.json'), null);
  assert.equal(envFilePath(configWith('/etc/passwd'), 'langgraph.json'), null);
  assert.equal(envFilePath(configWith({ A: 'x' }), 'langgraph.json'), null);
  assert.deepEqual(envFromFile('# comment\nA=1\nexport B="two words"\nC=\n').variables, { A: '1', B: 'two words', C: '' });
});

test("secrets win over langgraph.json's env, and Berth's own variables over both", () => {
  const env = runEnvironment({ configEnv: { A: 'config', B: 'config', C: 'config' }, secrets: { B: 'secret', C: 'secret' }, berth: { C: 'berth' } });
  assert.deepEqual(env, { A: 'config', B: 'secret', C: 'berth' });
});

test('the build key changes with every input and the workspace, and with nothing else', () => {
  const inputs: BuildInputs = {
    source: 'commit:0123456789abcdef0123456789abcdef01234567',
    commit_sha: '0123456789abcdef0123456789abcdef01234567',
    graph_config_path: 'langgraph.json',
    graph_config_sha256: 'a'.repeat(64),
    install_command: null,
    build_command: null,
    base_image: 'localhost/berth/langgraphjs-api:20',
    base_image_digest: 'b'.repeat(64),
    generator_version: 1,
  };
  const key = buildKey('ws-a', inputs);
  assert.equal(buildKey('ws-a', { ...inputs }), key);
  assert.notEqual(buildKey('ws-b', inputs), key, 'another workspace never shares a key');
  const changes: Partial<BuildInputs>[] = [
    { source: 'commit:1123456789abcdef0123456789abcdef01234567' },
    { graph_config_path: 'agent/langgraph.json' },
    { graph_config_sha256: 'c'.repeat(64) },
    { install_command: 'npm install' },
    { build_command: 'npm run build' },
    { base_image: 'localhost/berth/langgraphjs-api:22' },
    { base_image_digest: 'd'.repeat(64) },
    { generator_version: 2 },
  ];
  for (const change of changes) assert.notEqual(buildKey('ws-a', { ...inputs, ...change }), key, JSON.stringify(change));
});
