import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Whether this process runs the checkout compiled (scripts/run-tests.ts runs test files from its
 * tree of compiled JavaScript) rather than from the TypeScript sources through tsx.
 */
export const RUNS_COMPILED = import.meta.url.endsWith('.js');

/** The module of the checkout at `relative` (its .ts path), as this process runs it: the compiled copy when it runs compiled. */
export function moduleFile(relative: string): string {
  return path.join(ROOT, RUNS_COMPILED ? relative.replace(/\.ts$/, '.js') : relative);
}

/**
 * node's arguments that run a module of the checkout in a child process the way this process
 * runs: its compiled copy (no loader to pay for at every start), or its source through tsx.
 */
export function nodeArguments(relative: string): string[] {
  return RUNS_COMPILED ? ['--enable-source-maps', moduleFile(relative)] : ['--import', 'tsx', moduleFile(relative)];
}
