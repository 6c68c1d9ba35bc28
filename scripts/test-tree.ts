// The checkout compiled to JavaScript, for the test processes to run without a TypeScript loader.
//
// Every test process used to load the project through tsx: its module hooks (resolution and
// transformation on a loader thread, once per module of ~1,600) cost each process about 1.5 s
// of CPU before its first test, a fifth of a typical file's CPU (bench/results.md). This tree
// is built once per run: esbuild turns every TypeScript module into a JavaScript module beside
// it, and every other file of the checkout is hard-linked in, so that paths a test computes
// from its own location (fixtures, README.md, docs/, src/store/migrations/, the .ts sources
// themselves) find the same files they find in the checkout. node_modules/ and dist/ are
// linked as directories.
//
// Each run builds its own tree under .test-build/ (runs of two suites side by side in one
// checkout must not rebuild each other's files) and removes it at its end; trees of runs that
// were killed are removed by the next run.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { processAlive } from '../src/locks/process-alive.js';

/** Where the runs' trees live, relative to the checkout (ignored by git, the linters and the Dockerfile). */
const TREES = '.test-build';
/** The checkout's TypeScript that tests import or start; the dashboard is Vite's and fixtures are data. */
const COMPILED = /^(src|test|test-reliability|scripts|bench)\/.*(?<!\.d)\.ts$/;
const NOT_COMPILED = /^(src\/dashboard|test\/fixtures)\//;
/** Linked whole: the installed packages, and the build `npm ci` made (tests start it as `npm start` does). */
const LINKED_DIRECTORIES = ['node_modules', 'dist'];

export interface TestTree {
  /** The tree's root: the checkout's path of a file, below it, names its compiled copy. */
  root: string;
  remove(): void;
}

/** The files of the checkout, tracked or new (not ignored); undefined when it is not a git checkout. */
function checkoutFiles(root: string): string[] | undefined {
  try {
    return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 })
      .split('\0')
      .filter(Boolean);
  } catch {
    return undefined;
  }
}

/** Trees are named `<pid>-<time>`; a tree whose run is gone was left by a killed run. */
function removeAbandonedTrees(trees: string): void {
  for (const name of fs.existsSync(trees) ? fs.readdirSync(trees) : []) {
    const pid = Number(name.split('-')[0]);
    if (!Number.isInteger(pid) || !processAlive(pid)) fs.rmSync(path.join(trees, name), { recursive: true, force: true });
  }
}

/** A file's link in the tree; a copy where a hard link is refused (another file system). */
function linkInto(source: string, target: string): void {
  try {
    fs.linkSync(source, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return; // deleted in the checkout but not yet from git's index
    if (code !== 'EXDEV' && code !== 'EPERM') throw error;
    fs.copyFileSync(source, target);
  }
}

/**
 * Builds this run's tree, or answers undefined when the checkout cannot be listed (not a git
 * checkout): the tests then run from the sources through tsx, as before.
 */
export async function buildTestTree(checkout: string): Promise<TestTree | undefined> {
  const files = checkoutFiles(checkout);
  if (!files) return undefined;
  const trees = path.join(checkout, TREES);
  removeAbandonedTrees(trees);
  const root = path.join(trees, `${process.pid}-${Date.now()}`);
  const remove = () => fs.rmSync(root, { recursive: true, force: true });
  try {
    const directories = new Set<string>();
    for (const file of files.filter((name) => !LINKED_DIRECTORIES.includes(name.split('/')[0] as string))) {
      const target = path.join(root, file);
      const directory = path.dirname(target);
      if (!directories.has(directory)) {
        fs.mkdirSync(directory, { recursive: true });
        directories.add(directory);
      }
      linkInto(path.join(checkout, file), target);
    }
    for (const directory of LINKED_DIRECTORIES) {
      if (fs.existsSync(path.join(checkout, directory))) fs.symlinkSync(path.join(checkout, directory), path.join(root, directory), 'dir');
    }
    // A file deleted in the checkout but not yet from git's index is listed, and is not there.
    const entryPoints = files
      .filter((file) => COMPILED.test(file) && !NOT_COMPILED.test(file))
      .map((file) => path.join(checkout, file))
      .filter((file) => fs.existsSync(file));
    // What tsx does to each module, done once: types stripped, module syntax kept, and a source
    // map inline so that a failure's stack names the .ts line.
    await esbuild.build({
      entryPoints,
      outdir: root,
      outbase: checkout,
      format: 'esm',
      platform: 'node',
      target: `node${process.versions.node.split('.')[0]}`,
      sourcemap: 'inline',
      sourcesContent: false,
      logLevel: 'error',
    });
    return { root, remove };
  } catch (error) {
    remove();
    throw error;
  }
}
