import { runTool } from '../commands.js';
import { type ResolvedRuntime } from '../detect.js';
import { redact } from './logs.js';

/** One graph the agent server is to serve: its id and where langgraph.json points (`./src/graph.ts:graph`). */
export interface ExpectedGraph {
  id: string;
  spec: string;
}

const SEARCH_TIMEOUT_MS = 5_000;
/** Far more graphs than any configuration names; the server's own default assistants are searched for, not users'. */
const SEARCH_LIMIT = 1_000;
/** How many of the container's last lines a failure's status message quotes. */
const QUOTED_LINES = 12;
const QUOTED_CHARS = 2_000;

/**
 * The graphs an agent-server image (or a container of one) serves: LANGSERVE_GRAPHS, which the LangGraph CLI and
 * Berth's Dockerfile generator write from langgraph.json's `graphs` (the environment a run
 * adds can replace it). None for images that are not agent servers; then only `GET /ok`
 * is checked.
 */
export async function expectedGraphs(
  runtime: ResolvedRuntime,
  of: { image: string; env: Record<string, string> } | { container: string },
): Promise<ExpectedGraph[]> {
  let raw = 'env' in of ? of.env.LANGSERVE_GRAPHS : undefined;
  if (raw === undefined) {
    // A container's environment holds its secrets too: only LANGSERVE_GRAPHS is read from it.
    const [kind, ref] = 'image' in of ? ['image', of.image] : ['container', of.container];
    const inspected = await runTool(runtime, [kind, 'inspect', '--format', '{{json .Config.Env}}', ref]);
    if (inspected.code !== 0) return [];
    const vars = parseJson(inspected.stdout);
    const entry = Array.isArray(vars) ? vars.find((item): item is string => typeof item === 'string' && item.startsWith('LANGSERVE_GRAPHS=')) : undefined;
    raw = entry?.slice('LANGSERVE_GRAPHS='.length);
  }
  const graphs = raw === undefined ? null : parseJson(raw);
  if (graphs === null || typeof graphs !== 'object' || Array.isArray(graphs)) return [];
  return Object.entries(graphs as Record<string, unknown>).map(([id, value]) => ({
    id,
    // A graph may be an object ({path, description}) in newer configurations.
    spec: typeof value === 'string' ? value : typeof (value as { path?: unknown })?.path === 'string' ? (value as { path: string }).path : '',
  }));
}

export type GraphListing = { kind: 'listed'; missing: ExpectedGraph[] } | { kind: 'unverifiable'; why: string } | { kind: 'failed'; why: string };

/**
 * Which expected graphs the server does not list. The LangGraph API servers (JavaScript and
 * Python) create one assistant per graph at start, marked `created_by: system`; a graph that
 * did not load has none.
 */
export async function listedGraphs(url: string, expected: ExpectedGraph[], signal: AbortSignal): Promise<GraphListing> {
  let response: Response;
  try {
    response = await fetch(`${url}/assistants/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { created_by: 'system' }, limit: SEARCH_LIMIT, offset: 0 }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(SEARCH_TIMEOUT_MS)]),
      redirect: 'manual',
    });
  } catch (error) {
    return {
      kind: 'failed',
      why: `POST /assistants/search did not answer (${(error as Error).name === 'TimeoutError' ? 'timeout' : (error as Error).message})`,
    };
  }
  // The server's own authentication (langgraph.json `auth`) may refuse Berth; that is the project's choice, not a failure.
  if (response.status === 401 || response.status === 403) {
    await response.body?.cancel();
    return { kind: 'unverifiable', why: `POST /assistants/search answered ${response.status} (the server's authentication refuses unauthenticated requests)` };
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    return { kind: 'failed', why: `POST /assistants/search answered HTTP ${response.status}` };
  }
  const body = parseJson(await response.text().catch(() => ''));
  if (!Array.isArray(body)) return { kind: 'failed', why: 'POST /assistants/search did not answer a list of assistants' };
  const served = new Set(body.map((assistant) => (assistant as { graph_id?: unknown })?.graph_id).filter((id) => typeof id === 'string'));
  return { kind: 'listed', missing: expected.filter((graph) => !served.has(graph.id)) };
}

/**
 * The graphs the container's output blames: those whose module path appears in it (an
 * import that throws or a file that is missing names its file), else the one the
 * JavaScript server's loader reports by position (`Promise.all (index N)`, in
 * LANGSERVE_GRAPHS order; an export that is not there names nothing else).
 */
export function blamedGraphs(lines: string[], expected: ExpectedGraph[]): ExpectedGraph[] {
  const text = lines.join('\n');
  const byPath = expected.filter((graph) => {
    const file = modulePath(graph.spec);
    return file !== '' && text.includes(file);
  });
  if (byPath.length > 0) return byPath;
  const index = /Promise\.all \(index (\d+)\)/.exec(text)?.[1];
  const graph = index === undefined ? undefined : expected[Number(index)];
  return graph ? [graph] : [];
}

/** `./src/graph.ts:graph` → `src/graph.ts` (what stack traces and file errors quote). */
function modulePath(spec: string): string {
  const file = spec.replace(/:[^:/\\]*$/, '');
  return file.replace(/^\.\//, '');
}

export function describeGraphs(graphs: ExpectedGraph[]): string {
  return graphs.map((graph) => `'${graph.id}'${graph.spec ? ` (${graph.spec})` : ''}`).join(', ');
}

/**
 * The container's last lines for a status message, JSON log lines unwrapped and kept short;
 * redacted again after unwrapping, which turns an escaped value back into the plain one.
 */
export function quoteLines(lines: string[], secrets: string[]): string {
  const quoted = lines
    .slice(-QUOTED_LINES)
    .map((line) => redact(readable(line), secrets))
    .join('\n');
  return quoted.length > QUOTED_CHARS ? `…${quoted.slice(-QUOTED_CHARS)}` : quoted;
}

/** The servers log JSON (LOG_JSON=true): its event and error say more to a person than the envelope. */
function readable(line: string): string {
  const parsed = line.startsWith('{') ? parseJson(line) : null;
  if (parsed === null || typeof parsed !== 'object') return line;
  const { level, event, error } = parsed as { level?: unknown; event?: unknown; error?: unknown };
  if (typeof event !== 'string') return line;
  const firstErrorLine = typeof error === 'string' ? error.split('\n')[0] : undefined;
  return `${typeof level === 'string' ? `${level}: ` : ''}${event}${firstErrorLine ? `: ${firstErrorLine}` : ''}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
