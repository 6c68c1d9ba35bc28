import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type DockerfileCommandOptions, runDockerfileCommand } from '../../src/langgraph-project/dockerfile-command.js';
import { type DockerfileOptions, generateDockerfile } from '../../src/langgraph-project/dockerfile.js';
import { GraphConfigError, parseLangGraphConfig, readLangGraphConfigFile } from '../../src/langgraph-project/langgraph-config.js';

const fixtures = fileURLToPath(new URL('../fixtures/dockerfile/', import.meta.url));
const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-dockerfile-test-'));
after(() => fs.rm(scratch, { recursive: true, force: true }));

interface Case {
  readonly name: string;
  readonly dir: string;
  readonly config: string;
  readonly args: readonly string[];
}

async function loadCases(): Promise<Case[]> {
  const names = (await fs.readdir(fixtures, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  return Promise.all(
    names.sort().map(async (name) => {
      const dir = path.join(fixtures, name);
      const extra = await fs.readFile(path.join(dir, 'case.json'), 'utf8').then(JSON.parse, () => ({}));
      return { name, dir, config: extra.config ?? 'langgraph.json', args: extra.args ?? [] };
    }),
  );
}

/** The CLI flags the fixtures use, as command options. */
function commandOptions(testCase: Case, output: string): DockerfileCommandOptions {
  const options: { -readonly [K in keyof DockerfileCommandOptions]: DockerfileCommandOptions[K] } = { config: testCase.config, output };
  for (let index = 0; index < testCase.args.length; index++) {
    const flag = testCase.args[index];
    const value = () => testCase.args[++index] as string;
    if (flag === '--add-docker-compose') options.addDockerCompose = true;
    else if (flag === '--base-image') options.baseImage = value();
    else if (flag === '--api-version') options.apiVersion = value();
    else if (flag === '--engine-runtime-mode') options.engineRuntimeMode = value() as DockerfileCommandOptions['engineRuntimeMode'];
    else throw new Error(`${testCase.name}: the test does not know the flag ${flag}`);
  }
  return options;
}

const quietIo = (cwd: string) => ({ cwd, stdout: () => {}, stderr: () => {} });

async function projectFromFixture(name: string): Promise<{ dir: string; config: Awaited<ReturnType<typeof readLangGraphConfigFile>> }> {
  const dir = path.join(fixtures, name);
  return { dir, config: await readLangGraphConfigFile(path.join(dir, 'langgraph.json')) };
}

/** Instructions without comments and blank lines. */
function instructions(dockerfile: string): string[] {
  return dockerfile.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

describe('berth dockerfile writes what `langgraph dockerfile` writes', async () => {
  const cases = await loadCases();
  test('the fixtures cover JavaScript and Python projects', () => {
    assert.ok(cases.filter((testCase) => testCase.name.startsWith('js-')).length >= 8);
    assert.ok(cases.filter((testCase) => testCase.name.startsWith('py-')).length >= 8);
  });

  for (const testCase of cases) {
    test(testCase.name, async () => {
      const out = path.join(scratch, 'cli', testCase.name);
      await fs.mkdir(out, { recursive: true });
      await runDockerfileCommand(commandOptions(testCase, path.join(out, 'Dockerfile')), quietIo(testCase.dir));
      const expected = await fs.readFile(path.join(testCase.dir, 'expected.Dockerfile'), 'utf8');
      assert.equal(await fs.readFile(path.join(out, 'Dockerfile'), 'utf8'), expected);
      for (const extra of ['.dockerignore', 'docker-compose.yml', '.env']) {
        const golden = path.join(testCase.dir, `expected.${extra.replace(/^\./, '')}`);
        const wanted = await fs.readFile(golden, 'utf8').catch(() => null);
        const written = await fs.readFile(path.join(out, extra), 'utf8').catch(() => null);
        assert.equal(written, wanted, `${extra} differs from the CLI's`);
      }
    });
  }

  test('prints the Dockerfile to stdout, unchanged, without OUTPUT', async () => {
    let printed = '';
    const dir = path.join(fixtures, 'js-npm-lock');
    await runDockerfileCommand({ config: 'langgraph.json' }, { cwd: dir, stdout: (text) => (printed += text), stderr: () => {} });
    assert.equal(printed, await fs.readFile(path.join(dir, 'expected.Dockerfile'), 'utf8'));
  });

  test('tells how to pass dependencies outside the project as build contexts', async () => {
    let messages = '';
    const dir = path.join(fixtures, 'py-monorepo');
    await runDockerfileCommand({ config: 'apps/agent/langgraph.json' }, { cwd: dir, stdout: () => {}, stderr: (text) => (messages += text) });
    assert.match(messages, new RegExp(`--build-context shared=${path.join(dir, 'libs/shared')} --build-context outer-common=`));
  });

  test('keeps an existing .env when adding compose files', async () => {
    const out = path.join(scratch, 'keep-env');
    await fs.mkdir(out, { recursive: true });
    await fs.writeFile(path.join(out, '.env'), 'OPENAI_API_KEY=mine\n');
    const dir = path.join(fixtures, 'py-compose');
    await runDockerfileCommand({ config: 'langgraph.json', output: path.join(out, 'Dockerfile'), addDockerCompose: true }, quietIo(dir));
    assert.equal(await fs.readFile(path.join(out, '.env'), 'utf8'), 'OPENAI_API_KEY=mine\n');
  });

  test('refuses --add-docker-compose without OUTPUT', async () => {
    await assert.rejects(runDockerfileCommand({ config: 'langgraph.json', addDockerCompose: true }, quietIo(fixtures)), /name the Dockerfile/);
  });
});

describe('base images', () => {
  const defaults: DockerfileOptions = { defaultBaseImages: { node: 'localhost/berth-base-node', python: 'localhost/berth-base-python' } };

  test('replacements of the default images are tagged as the defaults are', async () => {
    const yarn = await projectFromFixture('js-yarn-lock');
    assert.equal((await generateDockerfile(yarn.config, yarn.dir, defaults)).image, 'localhost/berth-base-node:22');
    const wolfi = await projectFromFixture('js-dockerfile-lines');
    assert.equal((await generateDockerfile(wolfi.config, wolfi.dir, defaults)).image, 'localhost/berth-base-node:0.4.5-node22-wolfi');
    const python = await projectFromFixture('py-pyproject');
    const generated = await generateDockerfile(python.config, python.dir, defaults);
    assert.equal(generated.image, 'localhost/berth-base-python:3.12');
    assert.ok(generated.dockerfile.startsWith('FROM localhost/berth-base-python:3.12\n'));
  });

  test("an explicit base image wins over the replacement, and the config's base_image too", async () => {
    const flagged = await projectFromFixture('js-base-image-flag');
    assert.equal((await generateDockerfile(flagged.config, flagged.dir, defaults)).image, 'ignored/by-the-flag:20');
    const options = { ...defaults, baseImage: 'example/other' };
    assert.equal((await generateDockerfile(flagged.config, flagged.dir, options)).image, 'example/other:20');
  });

  test('an api_version range is refused: resolving it needs PyPI', async () => {
    const npm = await projectFromFixture('js-npm-lock');
    await assert.rejects(generateDockerfile(npm.config, npm.dir, { apiVersion: '~=0.4.0' }), (error: unknown) => {
      assert.ok(error instanceof GraphConfigError);
      assert.match(error.message, /api_version '~=0.4.0' is a range; pin a version/);
      return true;
    });
  });
});

describe('install and build commands (JavaScript)', () => {
  test('a given install command replaces the detected one', async () => {
    const npm = await projectFromFixture('js-npm-lock');
    const { dockerfile } = await generateDockerfile(npm.config, npm.dir, { installCommand: 'npm install --no-audit' });
    assert.ok(instructions(dockerfile).includes('RUN npm install --no-audit'));
    assert.ok(!dockerfile.includes('npm ci'));
  });

  test('commands that chain other commands are refused', async () => {
    const npm = await projectFromFixture('js-npm-lock');
    for (const installCommand of ['npm ci; curl evil', 'npm ci & sleep 1', 'npm ci | tee', 'echo $HOME']) {
      await assert.rejects(generateDockerfile(npm.config, npm.dir, { installCommand }), GraphConfigError, installCommand);
    }
    const { dockerfile } = await generateDockerfile(npm.config, npm.dir, { installCommand: 'npm ci && npm run build' });
    assert.ok(dockerfile.includes('RUN npm ci && npm run build'));
  });

  test('a monorepo build context installs at its root and builds in the project', async () => {
    const root = path.join(scratch, 'monorepo');
    const project = path.join(root, 'apps', 'agent');
    await fs.mkdir(project, { recursive: true });
    await fs.writeFile(path.join(root, 'package.json'), JSON.stringify({ name: 'root', workspaces: ['apps/*'] }));
    await fs.writeFile(path.join(root, 'yarn.lock'), '');
    const config = parseLangGraphConfig(JSON.stringify({ node_version: '20', graphs: { agent: './graph.js:graph' } }));
    const { dockerfile } = await generateDockerfile(config, project, { buildContext: root, buildCommand: 'yarn turbo build' });
    assert.deepEqual(instructions(dockerfile), [
      'FROM langchain/langgraphjs-api:20',
      'ADD . /deps/monorepo',
      'WORKDIR /deps/monorepo',
      'RUN yarn install --frozen-lockfile',
      `ENV LANGSERVE_GRAPHS='{"agent": "./graph.js:graph"}'`,
      'WORKDIR /deps/monorepo/apps/agent',
      'RUN yarn turbo build',
    ]);
  });
});

describe('the cached layout', () => {
  async function both(dir: string) {
    const config = await readLangGraphConfigFile(path.join(dir, 'langgraph.json'));
    const cli = await generateDockerfile(config, dir);
    const cached = await generateDockerfile(config, dir, { layout: 'cached' });
    return { cli: instructions(cli.dockerfile), cached: instructions(cached.dockerfile), result: cached };
  }

  test('copies the manifests and installs before adding the project; the rest is the same', async () => {
    const { cli, cached, result } = await both(path.join(fixtures, 'js-npm-lock'));
    assert.equal(result.layout, 'cached');
    const copy = 'COPY ["package.json","package-lock.json","/deps/js-npm-lock/"]';
    const install = 'RUN --mount=type=cache,target=/root/.npm npm ci';
    const add = 'ADD . /deps/js-npm-lock';
    assert.deepEqual(cached, [
      'FROM langchain/langgraphjs-api:20',
      'WORKDIR /deps/js-npm-lock',
      copy,
      install,
      add,
      `ENV LANGSERVE_GRAPHS='{"agent": "./src/agent.js:graph"}'`,
      cli.at(-1),
    ]);
    // Everything the CLI does happens, once each: only the manifest copy is new, and the
    // install differs only by its cache mount.
    const same = (line: string) => line.replace('--mount=type=cache,target=/root/.npm ', '');
    assert.deepEqual(new Set(cached.filter((line) => line !== copy).map(same)), new Set(cli));
  });

  test('keeps dockerfile_lines before the install and the ENV lines after it', async () => {
    const { cached } = await both(path.join(fixtures, 'js-no-lock'));
    const at = (prefix: string) => cached.findIndex((line) => line.startsWith(prefix));
    assert.ok(at('RUN --mount=type=cache,target=/root/.npm npm i') > at('COPY ["package.json","/deps/js-no-lock/"]'));
    assert.ok(at('ADD . ') > at('RUN --mount'));
    assert.ok(at('ENV LANGGRAPH_STORE=') > at('ADD . '));
    const lines = await both(path.join(fixtures, 'js-dockerfile-lines'));
    assert.ok(lines.cached.indexOf('RUN apk add --no-cache ffmpeg') < lines.cached.findIndex((line) => line.startsWith('COPY ')));
  });

  test('other package managers get their lock file and no npm cache mount', async () => {
    const { cached } = await both(path.join(fixtures, 'js-yarn-lock'));
    assert.ok(cached.includes('COPY ["package.json","yarn.lock","/deps/js-yarn-lock/"]'));
    assert.ok(cached.includes('RUN yarn install --frozen-lockfile'));
  });

  test('copies package-manager settings with the manifests', async () => {
    const dir = await copyFixture('js-npm-lock', 'npmrc');
    await fs.writeFile(path.join(dir, '.npmrc'), 'fund=false\n');
    const { cached } = await both(dir);
    assert.ok(cached.includes('COPY ["package.json","package-lock.json",".npmrc","/deps/npmrc/"]'));
  });

  for (const [what, change, reason] of [
    ['workspaces', { workspaces: ['packages/*'] }, /workspaces/],
    ['an install script', { scripts: { postinstall: 'node scripts/fetch-models.js' } }, /'postinstall' script/],
    ['a local package', { dependencies: { shared: 'file:../shared' } }, /local package \('file:..\/shared'\)/],
  ] as const) {
    test(`falls back to the CLI's layout, saying why, for ${what}`, async () => {
      const dir = await copyFixture('js-npm-lock', `fallback-${what.replaceAll(' ', '-')}`);
      const manifest = JSON.parse(await fs.readFile(path.join(dir, 'package.json'), 'utf8'));
      await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, ...change }));
      const { cli, cached, result } = await both(dir);
      assert.equal(result.layout, 'cli');
      assert.match(result.layoutNote ?? '', reason);
      assert.deepEqual(cached, cli);
    });
  }

  test("falls back when the project's node_modules would be copied over the install", async () => {
    const dir = await copyFixture('js-npm-lock', 'with-node-modules');
    await fs.mkdir(path.join(dir, 'node_modules'));
    const { result } = await both(dir);
    assert.equal(result.layout, 'cli');
    assert.match(result.layoutNote ?? '', /node_modules/);
  });

  test('changes nothing for Python projects', async () => {
    const { cli, cached, result } = await both(path.join(fixtures, 'py-requirements'));
    assert.equal(result.layout, 'cli');
    assert.deepEqual(cached, cli);
  });
});

async function copyFixture(name: string, as: string): Promise<string> {
  const dir = path.join(scratch, as);
  await fs.cp(path.join(fixtures, name), dir, { recursive: true });
  return dir;
}
