// Bundles the agent server (@langchain/langgraph-api's `server` entry and the graph registry
// the entrypoint corrects, see entrypoint.mjs) into a few files, run by
// scripts/build-base-images.sh with the host's node in the image's /api before it is copied
// in. Loading the server as it ships means reading and linking some 880 small ES modules,
// most of a container's start; the bundle's few files load in about half the time.
//
// Behaviour kept as it ships:
// - code splitting, so an `import()` the server makes late stays late (a bundle evaluating
//   all at once was slower than the modules, see bench/results.md);
// - the output lies two folders below the package's own, so the server's paths relative to
//   its module (`../../../package.json`) name the same file;
// - the schema parser (which starts a worker from a file beside it and reads templates there)
//   and the UI builder stay the package's own files, as do packages with native code or
//   their own file layout (esbuild, TypeScript, tsx, tailwind), imported from node_modules.
import path from 'node:path';
import process from 'node:process';
import { build } from 'esbuild';

/** Read by entrypoint.mjs; keep the two in step. */
export const OUTDIR = 'node_modules/@langchain/langgraph-api/berth-bundle/server';

const api = process.argv[2] ?? process.cwd();
const dist = path.join(api, 'node_modules/@langchain/langgraph-api/dist');
const outdir = path.join(api, OUTDIR);
const OWN_FILES = [path.join(dist, 'graph/parser/index.mjs'), path.join(dist, 'ui/load.mjs')];

const result = await build({
  absWorkingDir: api,
  entryPoints: { server: path.join(dist, 'server.mjs'), load: path.join(dist, 'graph/load.mjs') },
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: `node${process.versions.node}`,
  external: ['esbuild', 'esbuild-plugin-tailwindcss', 'tailwindcss', '@tailwindcss/*', 'typescript', '@typescript/vfs', 'tsx'],
  // CommonJS packages inside an ES module bundle call require() for Node's own modules.
  banner: { js: "import { createRequire as __berthCreateRequire } from 'node:module';\nconst require = __berthCreateRequire(import.meta.url);" },
  metafile: true,
  logLevel: 'warning',
  plugins: [
    {
      name: 'keep-own-files',
      setup(builder) {
        builder.onResolve({ filter: /^\.\.?\// }, async (args) => {
          if (args.pluginData?.resolving) return undefined;
          const resolved = await builder.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: { resolving: true } });
          // Relative to the output, which moves into the image (this runs before the copy).
          if (!OWN_FILES.includes(resolved.path)) return undefined;
          return { path: path.relative(outdir, resolved.path), external: true };
        });
      },
    },
  ],
});
const inputs = Object.keys(result.metafile.inputs).length;
const outputs = Object.keys(result.metafile.outputs).length;
console.error(`bundle-server: ${inputs} modules into ${outputs} files under ${OUTDIR}`);
