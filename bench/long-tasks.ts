/**
 * Where the event loop stalls, from a V8 CPU profile (`node --cpu-prof`, e.g.
 * `npm run bench -- --cpu-prof`): the longest unbroken runs of samples inside one call path,
 * which is JavaScript (or a native call it made: an SQLite statement, a collection) that held
 * the loop for that long without yielding to another task. Counting samples rather than
 * reading a clock keeps the figure meaningful on a loaded machine: a sample is taken only
 * while the thread runs.
 *
 * For every node of the call tree, the longest run of consecutive samples inside its
 * subtree; a node is reported when its run is at least --min-ms and no single child explains
 * most of it (the deepest frame that owns the stall).
 *
 *   node --import tsx bench/long-tasks.ts FILE.cpuprofile [--min-ms 10] [--top 15]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

interface Stall {
  path: string;
  /** Samples in the longest run, and how many runs reached the threshold. */
  longest: number;
  runs: number;
}

/** Frames that bracket every task: their runs are many tasks in a row, not one stall. */
const GENERIC = new Set(['(root)', '(program)', '(idle)', 'processTicksAndRejections', 'runMicrotasks', 'listOnTimeout', 'processTimers']);

export function longTasks(profile: Profile, minMs = 10): { intervalMs: number; stalls: Stall[] } {
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const sorted = [...deltas].sort((a, b) => a - b);
  // The profiler's interval: the median gap between samples (larger gaps are the thread descheduled).
  const intervalMs = (sorted[Math.floor(sorted.length / 2)] ?? 1000) / 1000;
  const minSamples = Math.max(2, Math.round(minMs / intervalMs));
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const ancestors = (id: number) => {
    const chain: number[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) chain.push(at);
    return chain;
  };
  // Current run per node (those in the last sample's chain), longest run and runs over the threshold.
  let current = new Map<number, number>();
  const longest = new Map<number, number>();
  const runs = new Map<number, number>();
  const close = (id: number, length: number) => {
    longest.set(id, Math.max(longest.get(id) ?? 0, length));
    if (length >= minSamples) runs.set(id, (runs.get(id) ?? 0) + 1);
  };
  for (const sample of samples) {
    const next = new Map<number, number>();
    for (const id of ancestors(sample)) next.set(id, (current.get(id) ?? 0) + 1);
    for (const [id, length] of current) if (!next.has(id)) close(id, length);
    current = next;
  }
  for (const [id, length] of current) close(id, length);

  const name = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*node_modules\//, '').replace(/^.*\/(src|dist)\//, '$1/');
    return `${functionName || '(anonymous)'}${file ? ` ${file}:${lineNumber + 1}` : ''}`;
  };
  const stalls: Stall[] = [];
  for (const node of profile.nodes) {
    const run = longest.get(node.id) ?? 0;
    if (run < minSamples || GENERIC.has(node.callFrame.functionName || '(anonymous)')) continue;
    const explainedByChild = (node.children ?? []).some((child) => (longest.get(child) ?? 0) >= run * 0.8);
    if (explainedByChild) continue;
    const chain = ancestors(node.id)
      .map((id) => byId.get(id) as ProfileNode)
      .filter((n) => !GENERIC.has(n.callFrame.functionName))
      .slice(0, 6)
      .map(name);
    stalls.push({ path: chain.join(' ← '), longest: run, runs: runs.get(node.id) ?? 0 });
  }
  stalls.sort((a, b) => b.longest - a.longest);
  return { intervalMs, stalls };
}

export function formatLongTasks(profile: Profile, minMs = 10, top = 15): string {
  const { intervalMs, stalls } = longTasks(profile, minMs);
  if (stalls.length === 0) return `no call path held the loop for ${minMs} ms or more (sampled every ${intervalMs.toFixed(2)} ms)`;
  return [
    `call paths that held the loop for ${minMs} ms or more (samples × ${intervalMs.toFixed(2)} ms; runs = how often):`,
    ...stalls.slice(0, top).map((s) => `${(s.longest * intervalMs).toFixed(0).padStart(6)} ms  ${String(s.runs).padStart(4)} runs  ${s.path}`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { 'min-ms': { type: 'string', default: '10' }, top: { type: 'string', default: '15' } },
  });
  for (const file of positionals) {
    const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
    process.stdout.write(`== ${file}\n${formatLongTasks(profile, Number(values['min-ms']), Number(values.top))}\n\n`);
  }
}
