// Whether this container can serve its graphs from the bundles compiled at image build
// (langgraph_api/js/prebuilt-graphs.mts) and so start without tsx. Read once, by both
// typescript-loader.mjs (which registers tsx only when not) and entrypoint.mjs.
//
// All or nothing: when any graph has no bundle matching its source (the image was built
// without the prebuild step, a file changed after it, LANGSERVE_GRAPHS names other graphs at
// run time) or the server is to load other project code (auth, custom routes, UI), every
// module loads through tsx exactly as before bundles existed.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';

/** Written by langgraph_api/js/prebuilt-graphs.mts; keep the two in step. */
const MANIFEST = '/api/prebuilt-graphs.json';
/** Settings naming project files the server imports itself. */
const OTHER_CODE = ['LANGGRAPH_AUTH', 'LANGGRAPH_HTTP', 'LANGGRAPH_UI'];

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

function graphPath(spec) {
  return typeof spec === 'string' ? spec : typeof spec?.path === 'string' ? spec.path : undefined;
}

/**
 * @returns {{ graphs: Record<string, unknown>, sources: Record<string, string> } | { why: string }}
 *   the graphs with their paths replaced by the bundles' and each graph's source file, or why tsx is needed.
 */
function plan() {
  const set = OTHER_CODE.find((name) => process.env[name]?.trim());
  if (set) return { why: `${set} names project code the server loads itself` };
  let graphs;
  let manifest;
  try {
    graphs = JSON.parse(process.env.LANGSERVE_GRAPHS ?? '');
    manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
  } catch {
    return { why: 'no graphs were compiled when the image was built' };
  }
  if (typeof graphs !== 'object' || graphs === null || Array.isArray(graphs)) return { why: 'LANGSERVE_GRAPHS is not a map of graphs' };
  const replaced = {};
  const sources = {};
  for (const [id, spec] of Object.entries(graphs)) {
    const [file, exportSymbol = 'default'] = (graphPath(spec) ?? '').split(':', 2);
    const source = path.resolve(process.cwd(), file);
    const prebuilt = manifest[source];
    if (!prebuilt) return { why: `graph "${id}" was not compiled when the image was built` };
    if (!prebuilt.exports.includes(exportSymbol)) return { why: `graph "${id}": the compiled ${file} has no export "${exportSymbol}"` };
    try {
      const changed = [[prebuilt.output, prebuilt.outputHash], ...Object.entries(prebuilt.inputs)].find(([input, hash]) => sha256(input) !== hash);
      if (changed) return { why: `graph "${id}": ${changed[0]} changed after the image's prebuild step` };
    } catch (error) {
      return { why: `graph "${id}": ${error.code ?? error.message} reading its compiled files` };
    }
    const target = `${prebuilt.output}:${exportSymbol}`;
    replaced[id] = typeof spec === 'string' ? target : { ...spec, path: target };
    sources[id] = source;
  }
  return { graphs: replaced, sources };
}

function safePlan() {
  try {
    return plan();
  } catch (error) {
    // A manifest not of the prebuild step's making must not keep the server from starting.
    return { why: `the record of the compiled graphs is unusable (${error.message})` };
  }
}

export const prebuilt = safePlan();
