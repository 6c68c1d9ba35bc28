// The one process of a LangGraph.js agent-server image: the API server of
// @langchain/langgraph-api, serving the graphs named in LANGSERVE_GRAPHS (the JSON map
// name -> "path:export" the LangGraph CLI writes into the Dockerfile), relative to the
// working directory, on $PORT. Unlike `langgraphjs dev` it neither watches files nor
// spawns helper processes. Started as `node --import /api/typescript-loader.mjs
// /api/entrypoint.mjs`, so graphs written in TypeScript load (see typescript-loader.mjs), or
// from the bundles compiled at image build when every graph has one (see prebuilt.mjs).
//
// Read from the environment (as the LangGraph CLI writes them):
//   LANGSERVE_GRAPHS (required), PORT (8000), HOST (0.0.0.0), N_JOBS_PER_WORKER (10),
//   LANGGRAPH_AUTH, LANGGRAPH_HTTP, LANGGRAPH_UI, LANGGRAPH_UI_CONFIG (JSON, optional).
import { constants as fsConstants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { prebuilt } from './prebuilt.mjs';

/**
 * The server and its graph registry, bundled at image build (bundle-server.mjs): the same
 * code as `@langchain/langgraph-api/server`, in a few files instead of some 880 modules.
 */
const SERVER_BUNDLE = '/api/node_modules/@langchain/langgraph-api/berth-bundle/server';

/** Settings the Python server reads but the JavaScript one has no option for. */
const UNSUPPORTED = ['LANGGRAPH_STORE', 'LANGGRAPH_CHECKPOINTER', 'LANGGRAPH_WEBHOOKS', 'LANGGRAPH_ENCRYPTION'];

/** One log line, in the server's own format: JSON when LOG_JSON=true (the image's default). */
function say(level, message, error) {
  const detail = error instanceof Error ? (error.stack ?? error.message) : error === undefined ? undefined : String(error);
  if (process.env.LOG_JSON === 'true') {
    console.error(JSON.stringify({ timestamp: new Date().toISOString(), level, event: `agent server: ${message}`, ...(detail ? { error: detail } : {}) }));
  } else {
    console.error(`agent server: ${message}${detail ? `\n${detail}` : ''}`);
  }
}

function fail(message, error) {
  say('error', message, error);
  process.exit(1);
}

function jsonFromEnv(name) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch (error) {
    return fail(`${name} is not valid JSON (${error.message})`);
  }
}

function integerFromEnv(name, fallback, min, max) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) fail(`${name}=${raw} is not a whole number from ${min} to ${max}`);
  return value;
}

/**
 * The server reads a graph's input and output schemas from the TypeScript types of the file
 * it loaded the graph from, which for a bundle must be the source it was compiled from. The
 * server records that file in GRAPH_SPEC (internal to the pinned server version; the image's
 * smoke test checks it is there) as it registers the graph, before it listens: the record is
 * corrected as it is written, so no request can see the bundle's path.
 */
async function readSchemasFromSources(sources) {
  const { GRAPH_SPEC } = await import(`${SERVER_BUNDLE}/load.mjs`);
  for (const [id, sourceFile] of Object.entries(sources)) {
    let spec;
    Object.defineProperty(GRAPH_SPEC, id, {
      enumerable: true,
      get: () => spec,
      set: (value) => {
        spec = { ...value, sourceFile };
      },
    });
  }
}

const graphs = jsonFromEnv('LANGSERVE_GRAPHS');
if (graphs === undefined) fail('LANGSERVE_GRAPHS is not set; it names the graphs to serve, e.g. {"agent":"./src/graph.ts:graph"}');
if (typeof graphs !== 'object' || graphs === null || Array.isArray(graphs) || Object.keys(graphs).length === 0) {
  fail('LANGSERVE_GRAPHS must be a JSON object naming at least one graph, e.g. {"agent":"./src/graph.ts:graph"}');
}
const port = integerFromEnv('PORT', 8000, 1, 65535);
const nWorkers = integerFromEnv('N_JOBS_PER_WORKER', 10, 1, 1000);
const cwd = process.cwd();

for (const name of UNSUPPORTED) {
  if (process.env[name]) say('warn', `${name} is set but the LangGraph.js server has no such setting; ignoring it`);
}

// The server keeps threads, runs and checkpoints in memory and flushes them to
// .langgraph_api/ under the working directory; it ignores a failure to create it and then
// fails on the first flush, so check up front and say what to change.
const stateDir = path.join(cwd, '.langgraph_api');
try {
  await mkdir(stateDir, { recursive: true });
  await access(stateDir, fsConstants.W_OK);
} catch (error) {
  fail(`cannot write the state directory ${stateDir} (${error.code ?? error.message}); run the container with a writable working directory`);
}

// The server calls itself through this URL (webhooks, custom routes).
process.env.LANGGRAPH_API_URL ??= `http://127.0.0.1:${port}`;

if ('why' in prebuilt) say('info', `graphs load through tsx: ${prebuilt.why}`);
else {
  say('info', 'graphs load from their bundles compiled at image build');
  await readSchemasFromSources(prebuilt.sources);
}

const { startServer } = await import(`${SERVER_BUNDLE}/server.mjs`);
let server;
try {
  server = await startServer({
    port,
    host: process.env.HOST || '0.0.0.0',
    nWorkers,
    cwd,
    graphs: prebuilt.graphs ?? graphs,
    auth: jsonFromEnv('LANGGRAPH_AUTH'),
    http: jsonFromEnv('LANGGRAPH_HTTP'),
    ui: jsonFromEnv('LANGGRAPH_UI'),
    ui_config: jsonFromEnv('LANGGRAPH_UI_CONFIG'),
  });
} catch (error) {
  fail('could not start', error);
}
say('info', `listening on ${server.host} with graphs ${Object.keys(graphs).join(', ')}`);

let stopping = false;
async function stop(signal) {
  if (stopping) return;
  stopping = true;
  say('info', `${signal} received, flushing state and stopping`);
  // A stuck flush must not keep a container from stopping.
  setTimeout(() => process.exit(1), 10_000).unref();
  try {
    await server.cleanup();
  } catch (error) {
    fail('flushing state failed', error);
  }
  process.exit(0);
}
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
