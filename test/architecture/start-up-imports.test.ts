// What a start of Berth loads. Heavy clients are imported where they are used (docs/architecture.md), so that
// every `berth` command, every server start and every test file that starts one does not pay for them; this
// fails when a static import brings one back onto the start-up path.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { deadline } from '../support/deadline.js';
import { moduleFile, RUNS_COMPILED } from '../support/entry.js';
import { groupOf, probeImport } from '../support/module-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What importing (or, with argv, running) a module of the tree (its .ts path) loads, as this process runs the tree: its packages and its files. */
function loadedBy(file: string, argv?: string[]): { packages: Set<string>; files: string[] } {
  const { urls } = probeImport({ tsx: !RUNS_COMPILED, file: moduleFile(file), argv, count: true, cwd: ROOT, timeout: deadline(120 * 1000) });
  return {
    packages: new Set(urls.map((url) => groupOf(url, ROOT))),
    files: urls.filter((url) => url.startsWith('file:')).map((url) => path.relative(ROOT, fileURLToPath(url))),
  };
}

const ONLY_WHERE_USED = ['redis', '@redis/client', '@peculiar/x509', 'tsyringe', 'reflect-metadata', 'jose', '@kubernetes/client-node'];

test(
  'starting the server loads no client it uses only for some requests (Redis, registry keys and tokens, Kubernetes)',
  { timeout: deadline(120 * 1000) },
  () => {
    const { packages, files } = loadedBy('src/server.ts');
    assert.ok(packages.has('fastify') && packages.has('kysely'), 'the probe saw the server load');
    assert.deepEqual(
      ONLY_WHERE_USED.filter((name) => packages.has(name)),
      [],
    );
    assert.deepEqual(
      files.filter((file) => file.includes('/typebox/build/value/')),
      [],
      "typebox's value toolkit: Check and Errors come from typebox/schema",
    );
  },
);

test('`berth --help` loads neither the server nor the listener, the builder or the Kubernetes client', { timeout: deadline(120 * 1000) }, () => {
  const { packages, files } = loadedBy('src/main.ts', ['--help']);
  assert.ok(packages.has('commander'), 'the probe saw the CLI load');
  assert.deepEqual(
    [...ONLY_WHERE_USED, 'fastify', 'kysely'].filter((name) => packages.has(name)),
    [],
  );
  assert.deepEqual(
    files.filter((file) => /^src\/(server|agent\/agent|runner\/runner)\.[jt]s$|^src\/store\//.test(file)),
    [],
  );
});
