import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { generateDockerfile } from '../../src/langgraph-project/dockerfile.js';
import {
  GraphConfigError,
  type LangGraphConfig,
  checkConfigAgainstCheckout,
  parseLangGraphConfig,
  readLangGraphConfigFile,
} from '../../src/langgraph-project/langgraph-config.js';

const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-langgraph-config-test-'));
after(() => fs.rm(scratch, { recursive: true, force: true }));

const parse = (document: unknown) => parseLangGraphConfig(JSON.stringify(document));
const python = { dependencies: ['.'], graphs: { agent: './agent.py:graph' } };
const node = { graphs: { agent: './src/agent.ts:graph' } };

function rejectsWith(action: () => unknown, message: RegExp): void {
  assert.throws(action, (error: unknown) => {
    assert.ok(error instanceof GraphConfigError, `expected a GraphConfigError, got ${String(error)}`);
    assert.match(error.message, message);
    return true;
  });
}

describe('parsing langgraph.json', () => {
  test('applies the defaults the CLI applies', () => {
    const config = parse(python);
    assert.equal(config.pythonVersion, '3.11');
    assert.equal(config.nodeVersion, null);
    assert.equal(config.imageDistro, 'debian');
    assert.equal(config.pipInstaller, 'auto');
    assert.deepEqual(config.graphs, [{ id: 'agent', spec: './agent.py:graph' }]);
    const js = parse(node);
    assert.equal(js.nodeVersion, '20');
    assert.equal(js.pythonVersion, null);
    const both = parse({ dependencies: ['.'], graphs: { py: './a.py:graph', js: './b.mts:graph' } });
    assert.deepEqual([both.pythonVersion, both.nodeVersion], ['3.11', '20']);
  });

  test('keeps graphs in the order written, integer-like names included', () => {
    const config = parseLangGraphConfig('{"graphs": {"b": "./b.ts:g", "2": "./two.ts:g", "a": {"path": "./a.ts:g"}}}');
    assert.deepEqual(
      config.graphs.map((graph) => graph.id),
      ['b', '2', 'a'],
    );
    assert.equal(config.graphs[2]?.spec, './a.ts:g');
  });

  test('tolerates unknown fields and lists them', () => {
    const config = parse({ ...node, $schema: 'https://example.com/schema.json', deployment: { replicas: 2 }, __proto__: 1 });
    assert.deepEqual(config.unknownFields, ['$schema', 'deployment']);
    const withProto = parseLangGraphConfig('{"graphs": {"agent": "./a.ts:g"}, "__proto__": {"polluted": true}}');
    assert.deepEqual(withProto.unknownFields, ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test('says where the JSON is broken', () => {
    rejectsWith(() => parseLangGraphConfig('{\n  "graphs": {"a": "./a.ts:g"},\n}'), /^langgraph\.json: is not valid JSON: .*\(3:1\)/);
    rejectsWith(() => parseLangGraphConfig('{"graphs": {"a": "./a.ts:g"}} // note'), /is not valid JSON/);
    rejectsWith(() => parseLangGraphConfig('{"graphs": {"a": "./a\t.ts:g"}}'), /is not valid JSON/);
    rejectsWith(() => parseLangGraphConfig('["graphs"]'), /^langgraph\.json: must be a JSON object/);
  });

  test('uses the name it is given for the file', () => {
    rejectsWith(() => parseLangGraphConfig('{}', 'apps/agent/langgraph.json'), /^apps\/agent\/langgraph\.json: 'graphs' must name/);
  });

  for (const [what, document, message] of [
    ['no graphs', { dependencies: ['.'] }, /^langgraph\.json: 'graphs' must name at least one graph/],
    ['empty graphs', { graphs: {} }, /'graphs' must name at least one graph/],
    ['graphs as a list', { graphs: ['./a.py:g'] }, /'graphs' must be an object naming graphs/],
    ['a graph that is a number', { graphs: { agent: 5 } }, /'graphs\.agent' must be a string like '\.\/src\/graph\.py:graph' or an object/],
    ['a graph object without a path', { graphs: { agent: { description: 'x' } } }, /'graphs\.agent' must be/],
    ['a Python graph without an attribute', { dependencies: ['.'], graphs: { agent: './agent.py' } }, /'graphs\.agent' must be written as/],
    ['dependencies as a string', { ...python, dependencies: '.' }, /'dependencies' must be a list of strings/],
    ['a dependency that is not a string', { ...python, dependencies: ['.', 3] }, /'dependencies\[1\]' must be a string/],
    ['Python graphs without dependencies', { graphs: { agent: './agent.py:graph' } }, /'dependencies' must list what to install/],
    ['a patch version of Python', { ...python, python_version: '3.11.4' }, /'python_version' must be 'major\.minor'.*"3\.11"/],
    ['Python 3.10', { ...python, python_version: '3.10' }, /'python_version' must be at least 3\.11/],
    ['python_version as a number', { ...python, python_version: 3.12 }, /'python_version' must be a string like "3\.11"/],
    ['Node 18', { ...node, node_version: '18' }, /'node_version' must be at least 20/],
    ['a Node minor version', { ...node, node_version: '20.11' }, /'node_version' must be a major version only/],
    ['an unknown distro', { ...python, image_distro: 'alpine' }, /'image_distro' must be one of 'debian', 'wolfi', 'bookworm', not 'alpine'/],
    ['bullseye', { ...python, image_distro: 'bullseye' }, /'image_distro' 'bullseye' images were deprecated/],
    ['an unknown pip installer', { ...python, pip_installer: 'conda' }, /'pip_installer' must be one of 'auto', 'pip', 'uv'/],
    ['auth.path without an attribute', { ...python, auth: { path: './auth.py' } }, /'auth\.path' must be written as/],
    ['http.app without an attribute', { ...python, http: { app: './app.py' } }, /'http\.app' must be written as/],
    ['auth as a string', { ...python, auth: './auth.py:auth' }, /'auth' must be an object with 'path'/],
    ['an unknown packaging tool', { ...python, keep_pkg_tools: ['npm'] }, /'keep_pkg_tools' may list only/],
    ['an unparsable api_version', { ...python, api_version: 'latest' }, /'api_version' must be a version like "0\.8"/],
    ['dockerfile_lines as a string', { ...python, dockerfile_lines: 'RUN true' }, /'dockerfile_lines' must be a list of strings/],
    ['env as a list', { ...python, env: ['A=b'] }, /'env' must be a path to an env file or an object/],
    ['a uv source', { ...python, source: { kind: 'uv', root: '.' } }, /'source' is not supported by Berth yet/],
    ['the old project_root', { ...python, project_root: '..' }, /'project_root' and top-level `package` are no longer supported/],
  ] as const) {
    test(`refuses ${what}, naming the field`, () => rejectsWith(() => parse(document), message));
  }

  test('accepts what the CLI accepts', () => {
    assert.equal(parse({ ...python, python_version: '3.12-slim' }).pythonVersion, '3.12-slim');
    assert.equal(parse({ ...python, api_version: '0.9.0rc1' }).apiVersion, '0.9.0rc1');
    assert.equal(parse({ ...python, api_version: '~=0.4.0' }).apiVersion, '~=0.4.0');
    assert.equal(parse({ ...python, store: null, auth: null, base_image: null }).baseImage, null);
    assert.equal(parse({ ...python, env: { PORT: 8000, DEBUG: true } }).env instanceof Map, true);
    assert.deepEqual(parse({ ...python, keep_pkg_tools: ['pip', 'wheel'] }).keepPkgTools, ['pip', 'wheel']);
  });
});

describe("package.json beside a JavaScript config (the CLI's engines rule)", () => {
  async function project(name: string, packageJson: string): Promise<string> {
    const dir = path.join(scratch, name);
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, 'langgraph.json'), JSON.stringify(node));
    await fs.writeFile(path.join(dir, 'package.json'), packageJson);
    return path.join(dir, 'langgraph.json');
  }

  test('a major version is accepted', async () => {
    const config = await readLangGraphConfigFile(await project('engines-ok', '{"engines": {"node": "22"}}'));
    assert.equal(config.nodeVersion, '20');
  });

  for (const [name, packageJson, message] of [
    ['engines-range', '{"engines": {"node": ">=20"}}', /^package\.json: 'engines\.node' must be a major version only, like "20", not '>=20'/],
    ['engines-old', '{"engines": {"node": "18"}}', /'engines\.node' must be at least 20/],
    ['engines-deno', '{"engines": {"node": "20", "deno": "1"}}', /'engines' may name only 'node', found 'deno'/],
    ['engines-broken', '{"engines": ', /^package\.json: is not valid JSON/],
  ] as const) {
    test(`refuses ${name.replace('engines-', '')} engines`, async () => {
      await assert.rejects(readLangGraphConfigFile(await project(name, packageJson)), (error: unknown) => {
        assert.ok(error instanceof GraphConfigError);
        assert.match(error.message, message);
        return true;
      });
    });
  }

  test('a Python config ignores package.json', async () => {
    const dir = path.join(scratch, 'python-with-package-json');
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, 'langgraph.json'), JSON.stringify(python));
    await fs.writeFile(path.join(dir, 'package.json'), '{"engines": {"node": ">=18"}}');
    assert.equal((await readLangGraphConfigFile(path.join(dir, 'langgraph.json'))).pythonVersion, '3.11');
  });
});

describe('checking a config against its checkout', () => {
  /** A checkout with the given files (paths → content) and langgraph.json at `configDir`. */
  async function checkout(name: string, files: Record<string, string>, document: unknown, configDir = '.') {
    const root = path.join(scratch, name);
    for (const [file, content] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await fs.writeFile(path.join(root, file), content);
    }
    await fs.mkdir(path.join(root, configDir), { recursive: true });
    const config = parseLangGraphConfig(JSON.stringify(document));
    return { root, configDir: path.join(root, configDir), config };
  }

  async function refused(location: { root: string; configDir: string; config: LangGraphConfig }, message: RegExp): Promise<void> {
    await assert.rejects(checkConfigAgainstCheckout(location.config, location), (error: unknown) => {
      assert.ok(error instanceof GraphConfigError, `expected a GraphConfigError, got ${String(error)}`);
      assert.match(error.message, message);
      return true;
    });
  }

  test('accepts a config whose files are all there', async () => {
    const location = await checkout(
      'complete',
      { 'src/agent.py': '', 'src/auth.py': '', 'src/app.py': '', 'ui/card.tsx': '', 'pip.conf': '', 'pkg/__init__.py': '' },
      {
        dependencies: ['.', './pkg', 'langchain'],
        graphs: { agent: './src/agent.py:graph', module: 'pkg.graph:graph' },
        auth: { path: './src/auth.py:auth' },
        http: { app: './src/app.py:app' },
        ui: { card: './ui/card.tsx' },
        pip_config_file: 'pip.conf',
        env: '.env',
      },
    );
    await checkConfigAgainstCheckout(location.config, location);
  });

  test('names a graph file that is missing', async () => {
    const location = await checkout('missing-graph', { 'package.json': '{}' }, { graphs: { agent: './src/x.ts:graph' } });
    await refused(location, /^langgraph\.json: graphs\.agent: file '\.\/src\/x\.ts' does not exist in the repository$/);
  });

  for (const [field, document] of [
    ['auth.path', { ...python, auth: { path: './auth.py:auth' } }],
    ['http.app', { ...python, http: { app: './web/app.py:app' } }],
    ['checkpointer.path', { ...python, checkpointer: { path: './cp.py:saver' } }],
    ['ui.card', { ...python, ui: { card: './ui/card.tsx' } }],
    ['pip_config_file', { ...python, pip_config_file: 'pip.conf' }],
    ['dependencies[1]', { ...python, dependencies: ['.', './libs/missing'] }],
  ] as const) {
    test(`names ${field} when what it names is missing`, async () => {
      const location = await checkout(`missing-${field}`, { 'agent.py': '' }, document);
      await refused(location, new RegExp(`^langgraph\\.json: ${field.replace(/[.[\]]/g, '\\$&')}: (file|directory) '.*' does not exist`));
    });
  }

  test('refuses a local dependency that is a file', async () => {
    const location = await checkout('dependency-file', { 'agent.py': '', 'lib.py': '' }, { ...python, dependencies: ['.', './lib.py'] });
    await refused(location, /dependencies\[1\]: '\.\/lib\.py' must be a directory/);
  });

  test('refuses paths that climb out of the checkout', async () => {
    const location = await checkout('climbs', { 'agent.py': '' }, { ...python, dependencies: ['.', '../../etc'] });
    await refused(location, /^langgraph\.json: dependencies\[1\]: '\.\.\/\.\.\/etc' points outside the repository$/);
    const graph = await checkout('climbs-graph', {}, { graphs: { agent: '../../../etc/agent.ts:graph' } });
    await refused(graph, /graphs\.agent: '\.\.\/\.\.\/\.\.\/etc\/agent\.ts' points outside the repository/);
    const env = await checkout('climbs-env', { 'a.ts': '' }, { graphs: { agent: './a.ts:g' }, env: '../secrets/.env' });
    await refused(env, /env: '\.\.\/secrets\/\.env' points outside the repository/);
  });

  test('allows a parent directory that is still inside the checkout (monorepo)', async () => {
    const location = await checkout(
      'monorepo',
      { 'apps/agent/agent.py': '', 'libs/shared/pyproject.toml': '' },
      { dependencies: ['.', '../../libs/shared'], graphs: { agent: './agent.py:graph' } },
      'apps/agent',
    );
    await checkConfigAgainstCheckout(location.config, location);
  });

  test('refuses absolute paths', async () => {
    const location = await checkout('absolute', {}, { graphs: { agent: '/etc/agent.ts:graph' } });
    await refused(location, /graphs\.agent: '\/etc\/agent\.ts' must be a path relative to langgraph\.json, inside the repository/);
    const dependency = await checkout('absolute-dep', { 'a.py': '' }, { dependencies: ['./', '.', '/usr/lib'], graphs: { a: './a.py:g' } });
    // "/usr/lib" does not start with "." so, as in the CLI, it is a package name for pip, not a path.
    await checkConfigAgainstCheckout(dependency.config, dependency);
  });

  test('refuses symbolic links that lead outside, to a file or a directory', async () => {
    const outside = path.join(scratch, 'outside');
    await fs.mkdir(path.join(outside, 'lib'), { recursive: true });
    await fs.writeFile(path.join(outside, 'agent.ts'), 'export const graph = {};');
    const file = await checkout('link-file', {}, { graphs: { agent: './src/agent.ts:graph' } });
    await fs.mkdir(path.join(file.root, 'src'));
    await fs.symlink(path.join(outside, 'agent.ts'), path.join(file.root, 'src', 'agent.ts'));
    await refused(file, /graphs\.agent: '\.\/src\/agent\.ts' leads through a symbolic link to outside the repository/);

    const dir = await checkout('link-dir', { 'agent.py': '' }, { ...python, dependencies: ['.', './vendor'] });
    await fs.symlink(outside, path.join(dir.root, 'vendor'));
    await refused(dir, /dependencies\[1\]: '\.\/vendor' leads through a symbolic link to outside/);

    const through = await checkout('link-through', {}, { graphs: { agent: './vendor/agent.ts:graph' } });
    await fs.symlink(outside, path.join(through.root, 'vendor'));
    await refused(through, /graphs\.agent: '\.\/vendor\/agent\.ts' leads through a symbolic link to outside/);
  });

  test('accepts symbolic links that stay inside', async () => {
    const location = await checkout('link-inside', { 'real/agent.ts': '' }, { graphs: { agent: './src/agent.ts:graph' } });
    await fs.symlink(path.join(location.root, 'real'), path.join(location.root, 'src'));
    await checkConfigAgainstCheckout(location.config, location);
  });

  test('refuses a config directory outside the checkout', async () => {
    const location = await checkout('config-outside', { 'a.ts': '' }, { graphs: { agent: './a.ts:g' } });
    await refused({ ...location, configDir: scratch }, /^langgraph\.json: lies outside the repository/);
  });
});

describe('problems found while writing the Dockerfile', () => {
  async function project(name: string, files: Record<string, string>, document: unknown): Promise<[LangGraphConfig, string]> {
    const dir = path.join(scratch, 'generate', name);
    for (const [file, content] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await fs.writeFile(path.join(dir, file), content);
    }
    await fs.mkdir(dir, { recursive: true });
    return [parseLangGraphConfig(JSON.stringify(document)), dir];
  }

  async function fails(name: string, files: Record<string, string>, document: unknown, message: RegExp): Promise<void> {
    const [config, dir] = await project(name, files, document);
    await assert.rejects(generateDockerfile(config, dir), (error: unknown) => {
      assert.ok(error instanceof GraphConfigError, `expected a GraphConfigError, got ${String(error)}`);
      assert.match(error.message, message);
      return true;
    });
  }

  test('a graph file outside every local package', () =>
    fails(
      'outside-deps',
      { 'agent.py': '', 'lib/x.py': '' },
      { dependencies: ['./lib'], graphs: { agent: './agent.py:graph' } },
      /graphs\.agent: '\.\/agent\.py' is not inside any local package in 'dependencies'/,
    ));

  test('a missing local dependency', () =>
    fails('missing-dep', { 'agent.py': '' }, { dependencies: ['.', './nope'], graphs: { agent: './agent.py:graph' } }, /dependency '\.\/nope' does not exist/));

  test('two dependencies holding the same package', () =>
    fails(
      'same-package',
      { 'agent.py': '', 'tools/__init__.py': '', 'tools/t.py': '' },
      { dependencies: ['.', './tools'], graphs: { agent: './agent.py:graph' } },
      // "." (no __init__.py) is laid out as src/, so its tools/ folder is a package "tools" too.
      /dependencies '\.' and '\.\/tools' both hold a package named 'tools'/,
    ));

  test('a package name that would shadow the server', () =>
    fails(
      'reserved',
      { 'langgraph/__init__.py': '', 'agent.py': '' },
      { dependencies: ['./langgraph'], graphs: { agent: 'langgraph.agent:graph' } },
      /'langgraph', a name reserved for the server's own packages/,
    ));
});
