/**
 * `node --import tsx bench/startup.ts`: what starting Berth costs before it does anything.
 *
 * For each target (the server module under tsx, as every test file imports it; the compiled server
 * under plain node, as `npm start`; the compiled CLI printing its help, as every `berth` command
 * starts) it reports the modules loaded, counted once with a load hook (ESM through `module.register`,
 * CommonJS through `Module._load`) and grouped by package, and the median of N fresh processes' import
 * time and CPU time (the loader-hooks thread's included). Module counts are deterministic; times on a shared
 * machine are not, so the runs of all targets (and with `--against DIR`, of another checkout built with
 * `npm run build`, for A/B) alternate.
 *
 * Flags: --runs N (default 7), --against DIR, --targets a,b (server-tsx, server-dist, cli-help),
 * --files a.ts,b.ts (more targets: these files of the tree imported under tsx, e.g. test support modules),
 * --top N packages listed per target (default 12).
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { groupOf, type ImportSample, probeImport } from '../test/support/module-graph.js';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    against: { type: 'string' },
    targets: { type: 'string', default: 'server-tsx,server-dist,cli-help' },
    files: { type: 'string' },
    top: { type: 'string', default: '12' },
  },
});

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Target {
  name: string;
  /** Under tsx (`--import tsx`) or plain node. */
  tsx: boolean;
  /** File imported, relative to the tree. */
  file: string;
  /** When set, the file is run as the program with these arguments (its exit ends the measurement). */
  argv?: string[];
}

const TARGETS: Target[] = [
  { name: 'server-tsx', tsx: true, file: 'src/server.ts' },
  { name: 'server-dist', tsx: false, file: 'dist/server.js' },
  { name: 'cli-help', tsx: false, file: 'dist/main.js', argv: ['--help'] },
];

function runOnce(target: Target, tree: string, count: boolean): ImportSample {
  return probeImport({ tsx: target.tsx, file: path.join(tree, target.file), argv: target.argv, count, cwd: tree });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const trees = [{ label: 'this tree', dir: ROOT }, ...(flags.against ? [{ label: path.resolve(flags.against), dir: path.resolve(flags.against) }] : [])];
const selected = [
  ...TARGETS.filter((t) => flags.targets.split(',').includes(t.name)),
  ...(flags.files ? flags.files.split(',').map((file) => ({ name: file, tsx: true, file })) : []),
];
const runs = Number(flags.runs);
const top = Number(flags.top);

process.stdout.write(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${os.cpus().length} cores\n\n`,
);
for (const target of selected) {
  for (const tree of trees) {
    const { urls } = runOnce(target, tree.dir, true);
    const groups = new Map<string, number>();
    for (const url of urls) groups.set(groupOf(url, tree.dir), (groups.get(groupOf(url, tree.dir)) ?? 0) + 1);
    const listed = [...groups].sort((a, b) => b[1] - a[1]).slice(0, top);
    process.stdout.write(`${target.name} (${tree.label}): ${urls.length} modules; ${listed.map(([g, n]) => `${g} ${n}`).join(', ')}\n`);
  }
}

const times = new Map<string, { importMs: number[]; cpuMs: number[] }>();
for (let run = 0; run < runs; run++) {
  for (const target of selected) {
    for (const tree of run % 2 ? [...trees].reverse() : trees) {
      const sample = runOnce(target, tree.dir, false);
      const key = `${target.name} (${tree.label})`;
      const entry = times.get(key) ?? { importMs: [], cpuMs: [] };
      entry.importMs.push(sample.importMs);
      entry.cpuMs.push(sample.cpuMs);
      times.set(key, entry);
    }
  }
}
process.stdout.write(`\nmedian of ${runs} fresh processes, alternating:\n`);
for (const [key, entry] of times) {
  process.stdout.write(
    `  ${key.padEnd(40)} import ${median(entry.importMs).toFixed(0).padStart(5)} ms  process CPU ${median(entry.cpuMs).toFixed(0).padStart(5)} ms\n`,
  );
}
process.stdout.write(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} at the end\n`,
);
