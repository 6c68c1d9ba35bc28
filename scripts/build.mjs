// Builds the server into dist/: esbuild writes each TypeScript module of src/ as a JavaScript
// module beside the others (types stripped, nothing bundled, as tsc would), and tsc writes
// only the declarations of the published client (the package's one typed export, `./client`).
// The whole tree's types are checked by `npm run typecheck`, not here: checking them twice
// cost every install and every image build about a minute of CPU. The dashboard is vite's
// (src/dashboard/vite.config.ts), run after this by `npm run build`.
//
//   node scripts/build.mjs [--js-only] [checkout]   (default: this one; --js-only skips the declarations)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';

const jsOnly = process.argv.includes('--js-only');
const ROOT = path.resolve(process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? path.join(import.meta.dirname, '..'));
const SOURCE = path.join(ROOT, 'src');
const OUT = path.join(ROOT, 'dist');

const modules = fs
  .readdirSync(SOURCE, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.startsWith(`dashboard${path.sep}`))
  .map((file) => path.join(SOURCE, file));

await esbuild.build({
  entryPoints: modules,
  outdir: OUT,
  outbase: SOURCE,
  format: 'esm',
  platform: 'node',
  // tsconfig.json's target: what the code is written for.
  target: 'es2022',
  logLevel: 'warning',
});

if (!jsOnly) {
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.client.json')], { stdio: 'inherit' });
}
