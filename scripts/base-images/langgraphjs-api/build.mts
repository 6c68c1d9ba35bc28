// The prebuild step of Berth's JavaScript agent-server base image, at the path the
// LangGraph CLI's generated Dockerfile runs (`tsx /api/langgraph_api/js/build.mts`, in the
// project directory, after the install and after `ENV LANGSERVE_GRAPHS=...`).
//
// It fails the image build when a graph named in LANGSERVE_GRAPHS has no source file, so a
// wrong path in langgraph.json is reported while building rather than when the container
// starts. It does not import the graphs: modules that read API keys at import time would
// fail here, where a build has no secrets.
//
// Then it compiles each graph ahead of time (prebuilt-graphs.mts), so the container can start
// without the TypeScript loader, whose hooks slow down every module the server loads.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { prebuildGraphs } from './prebuilt-graphs.mjs';

type GraphSpec = string | { path?: unknown };

function fail(message: string): never {
  console.error(`prebuild: ${message}`);
  process.exit(1);
}

function graphsFromEnv(): Record<string, GraphSpec> {
  const raw = process.env.LANGSERVE_GRAPHS;
  if (!raw) fail('LANGSERVE_GRAPHS is not set; the Dockerfile sets it from the "graphs" of langgraph.json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    fail(`LANGSERVE_GRAPHS is not valid JSON (${(error as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    fail('LANGSERVE_GRAPHS must be a JSON object naming at least one graph');
  }
  return parsed as Record<string, GraphSpec>;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

const graphs = graphsFromEnv();
const problems: string[] = [];
for (const [name, spec] of Object.entries(graphs)) {
  const reference = typeof spec === 'string' ? spec : typeof spec?.path === 'string' ? spec.path : undefined;
  if (!reference) {
    problems.push(`graph "${name}" has no path (expected "./file.ts:export")`);
    continue;
  }
  const file = reference.split(':')[0] ?? '';
  const resolved = path.resolve(process.cwd(), file);
  if (!(await isFile(resolved))) problems.push(`graph "${name}": ${file} does not exist in ${process.cwd()}`);
  else console.log(`prebuild: graph "${name}" -> ${path.relative(process.cwd(), resolved)}`);
}
if (problems.length > 0) fail(`${problems.join('; ')}. Check the "graphs" paths in langgraph.json (relative to its directory).`);

await prebuildGraphs(graphs, process.cwd());
