// Compiles the graphs of LANGSERVE_GRAPHS at image build (called by build.mts), so the agent
// server starts without tsx: tsx's module hooks run for every module loaded after them, the
// server's own hundreds included, which made up seconds of each container start.
//
// Each graph is bundled with esbuild (what tsx compiles with, reading the same tsconfig.json)
// into a file beside its source, the project's own modules inlined and its packages left to
// load from node_modules at run time. /api/prebuilt.mjs decides at start whether every graph
// has an up-to-date bundle, and only then leaves tsx out. A graph whose bundle would not behave
// as its source does under tsx is not bundled and keeps the old way; so is one that does not
// compile here (its error then shows at start, where it always did).
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build, type Metafile } from 'esbuild';

/** Read by /api/prebuilt.mjs; keep the two in step. */
const MANIFEST = '/api/prebuilt-graphs.json';
const SUFFIX = '.berth-prebuilt.mjs';

/** One bundle: the graph's source and every project file inlined into it, with their hashes as of this build. */
export interface PrebuiltGraph {
  output: string;
  outputHash: string;
  exports: string[];
  inputs: Record<string, string>;
}

type GraphSpec = string | { path?: unknown };

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/**
 * Why a bundle would not match the source run by tsx, if it would not. In a bundle, every
 * project file shares the entry's location, and CommonJS names do not exist.
 */
function unlike(file: string, text: string, isEntry: boolean): string | undefined {
  if (/\b__(dirname|filename)\b/.test(text)) return `${file} uses __dirname or __filename`;
  if (!isEntry && /\bimport\.meta\b/.test(text)) return `${file} uses import.meta, which in a bundle is the graph file's`;
  // A computed import() is resolved at run time, from the bundle's directory and without tsx.
  if (/\bimport\s*\(\s*(?!(['"])[^'"\n]*\1\s*\))/.test(text)) return `${file} imports a module by a computed name`;
  return undefined;
}

async function prebuildOne(source: string, exportSymbol: string, cwd: string): Promise<PrebuiltGraph | string> {
  if (source.split(path.sep).includes('node_modules')) return 'it is inside node_modules';
  const output = path.join(path.dirname(source), `.${path.basename(source)}${SUFFIX}`);
  let metafile: Metafile;
  try {
    ({ metafile } = await build({
      entryPoints: [source],
      absWorkingDir: cwd,
      outfile: output,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: `node${process.versions.node}`,
      // No source map: Node reads maps only with source maps enabled for the whole process,
      // and then also reads the thousands the packages in node_modules ship. A stack trace
      // names the bundle, beside the source and named after it, whose code is the source's
      // without types, each file headed by its path.
      metafile: true,
      logLevel: 'silent',
    }));
  } catch (error) {
    const first = (error as { errors?: { text?: string }[] }).errors?.[0]?.text ?? (error as Error).message;
    return `it does not compile (${first.slice(0, 200)})`;
  }
  const relativeOutput = path.relative(cwd, output);
  const text = await readFile(output, 'utf8');
  const inputs: Record<string, string> = {};
  let reason: string | undefined;
  const exports = metafile.outputs[relativeOutput]?.exports ?? [];
  // A CommonJS module's exports are not named in an ES module bundle, and a `require` of a
  // module left out of the bundle throws in one.
  if (!exports.includes(exportSymbol)) reason = `the bundle would have no export "${exportSymbol}"`;
  else if (/\b__require\b/.test(text)) reason = 'a module of the project calls require()';
  for (const input of Object.keys(metafile.outputs[relativeOutput]?.inputs ?? {})) {
    const file = path.resolve(cwd, input);
    const content = await readFile(file);
    inputs[file] = sha256(content);
    reason ??= unlike(input, content.toString('utf8'), file === source);
  }
  if (reason !== undefined) {
    await rm(output, { force: true });
    return reason;
  }
  return { output, outputHash: sha256(text), exports, inputs };
}

async function readManifest(): Promise<Record<string, PrebuiltGraph>> {
  try {
    return JSON.parse(await readFile(MANIFEST, 'utf8')) as Record<string, PrebuiltGraph>;
  } catch {
    return {};
  }
}

/** Bundles each graph it can and records the bundles in the manifest; never fails the build. */
export async function prebuildGraphs(graphs: Record<string, GraphSpec>, cwd: string): Promise<void> {
  const manifest = await readManifest();
  for (const [name, spec] of Object.entries(graphs)) {
    const reference = typeof spec === 'string' ? spec : typeof spec?.path === 'string' ? spec.path : '';
    const [file = '', exportSymbol = 'default'] = reference.split(':', 2);
    const source = path.resolve(cwd, file);
    const result = await prebuildOne(source, exportSymbol, cwd);
    if (typeof result === 'string') {
      delete manifest[source];
      console.log(`prebuild: graph "${name}" will load through tsx at start: ${result}`);
    } else {
      manifest[source] = result;
      console.log(`prebuild: graph "${name}" compiled to ${path.relative(cwd, result.output)}`);
    }
  }
  await writeFile(MANIFEST, `${JSON.stringify(manifest, null, 1)}\n`);
}
