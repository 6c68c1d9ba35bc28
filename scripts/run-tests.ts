// Runs the test files under the given roots (default test/ and test-reliability/, every suite
// CI runs) with node's test runner, one process per file, BERTH_TEST_CONCURRENCY (default 2)
// at a time, in lanes:
//   the first lane runs the image files first (those that take the machine turn: they build
//           images and time real processes), one after another, then fast files;
//   the others run only fast files.
// An image file spends much of its time waiting (a container's start, a registry, a
// build's I/O): alone it left about half of the two cores idle, so one fast lane beside it
// uses them. (Two fast lanes beside it oversubscribed the cores and stretched every file, and
// the image files one after the other after the fast ones left the cores half idle for
// their whole length; bench/results.md.)
// Within a lane's list, files run slowest first, by the times of earlier runs on this machine
// (TIMES_FILE; a file never timed counts as slowest), so the run does not end on one long
// file while the other lanes idle.
// The one timeout policy: a file may run for what it declares (the sum of its tests'
// `timeout: deadline(…)`) plus a base for what it does not declare, plus the wait for the
// machine turn when it takes one, all scaled by BERTH_TEST_DEADLINE_FACTOR, capped at
// FILE_CAP_MS and at what is left of the run's budget (RUN_BUDGET_MS, below). Past its limit
// its process group is stopped and the file fails, naming the tests still running; a file
// with no budget left is not started and fails.
// Test processes run the checkout compiled to JavaScript (scripts/test-tree.ts: built once per
// run, 1–2 s on a quiet machine), not the sources through tsx, whose loader cost every process ~1.5 s of CPU;
// --source runs them from the sources through tsx, as a checkout that is not a git one does.
// --checks runs `npm run check` (types, lint, layering, dead code, formatting) as one more fast
// task, beside the files: alone before them it held one core for ~2 min while the other idled.
// Ends with the time of every file, slowest first, and node's counts summed over all files.
//
//   node --import tsx scripts/run-tests.ts [--tier=fast|images] [--checks] [--list] [--source] [root or file …]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deadline, deadlineFactor } from '../test/support/deadline.js';
import { TURN_TIMEOUT_MS } from '../test/support/machine-lock.js';
import { buildTestTree, type TestTree } from './test-tree.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const REPORTER = path.join(ROOT, 'scripts/test-events-reporter.mjs');
/** What a file may take beyond the timeouts its tests declare (its hooks, its undeclared tests). */
const UNDECLARED_BASE_MS = 5 * 60_000;
/**
 * CI's budget for a whole run, wall-clock. Declared timeouts are worst cases and the factor
 * multiplies them (hostile-build.test.ts declares 145 min, 580 min at CI's factor 4): left
 * alone, one hung file would outlast the budget. `.ci/run` sets BERTH_TEST_RUN_STARTED_AT
 * (Unix seconds) once, so the runs it makes (npm test, the listener's, the reliability
 * suite) share one budget counted from its start; otherwise a run counts from its own.
 */
const RUN_BUDGET_MS = 90 * 60_000;
/**
 * No file may take more than this, whatever it declares: a run on a busy machine takes
 * about 40 min (issue 26's bound for three busy runs), so a file stopped at its cap
 * still leaves the run inside the budget: 40 + 45 = 85 min of 90.
 */
const FILE_CAP_MS = 45 * 60_000;
/** How long a stopped file gets to end before its process group is killed. */
const STOP_GRACE_MS = 10_000;
/** How long the processes a file started get to end after it (a busy machine is slow to end them too). */
const LEAK_GRACE_MS = deadline(3_000);
/**
 * Each file's duration in earlier runs on this machine, shared by every checkout here (CI's
 * fresh clones included): it only orders the files, so a stale or missing entry costs a
 * less even finish, never a wrong result.
 */
const TIMES_FILE = path.join(os.tmpdir(), 'berth-test-times.json');
const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;
type Count = (typeof COUNTS)[number];

interface TestFile {
  /** The test file, or the name of a command that is not one (`npm run check`). */
  file: string;
  tier: 'fast' | 'images';
  limitMs: number;
  /** Run instead of a test file: passes when it exits 0. */
  command?: string[];
}

/** The checks as a task of the run: ~2 min of one core quiet, 5.4 min beside two busy loops with their caches cold. */
const CHECKS: TestFile = { file: 'npm run check', tier: 'fast', limitMs: deadline(15 * 60_000), command: ['npm', 'run', 'check', '--silent'] };

interface Outcome extends TestFile {
  code: number | null;
  durationMs: number;
  /** CPU time of the file's process and the processes it waited for (its servers, git, the CLI); not of containers. */
  cpuMs: number | undefined;
  counts: Record<Count, number>;
  /** Why the file failed beyond its tests' own failures. */
  problems: string[];
  /** Its failed tests and hooks, each with what was thrown (a suite failed by its tests left out). */
  failures: { test: string; why: string }[];
}

function parseArguments(argv: string[]): { roots: string[]; tiers: TestFile['tier'][]; checks: boolean; list: boolean; source: boolean } {
  const roots: string[] = [];
  let tiers: TestFile['tier'][] = ['fast', 'images'];
  let checks = false;
  let list = false;
  let source = false;
  for (const arg of argv) {
    const tier = /^--tier=(fast|images)$/.exec(arg);
    if (tier) tiers = [tier[1] as TestFile['tier']];
    else if (arg === '--checks') checks = true;
    else if (arg === '--list') list = true;
    else if (arg === '--source') source = true;
    else if (arg.startsWith('--')) throw new Error(`unknown option ${arg} (known: --tier=fast|images, --checks, --list, --source)`);
    else roots.push(arg);
  }
  return { roots, tiers, checks, list, source };
}

/** Every suite: CI runs them all in one run, so that they share its lanes. */
const DEFAULT_ROOTS = ['test', 'test-reliability'];

function discover(roots: string[]): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.test.ts')) files.push(full);
    }
  };
  for (const root of roots.length > 0 ? roots : DEFAULT_ROOTS) {
    if (fs.statSync(root).isDirectory()) walk(root);
    else files.push(root);
  }
  // Named from the checkout's root, as the compiled tree names its copies.
  return files.map((file) => path.relative(ROOT, path.resolve(file))).sort();
}

function readTimes(): Record<string, number> {
  try {
    const times = JSON.parse(fs.readFileSync(TIMES_FILE, 'utf8')) as unknown;
    return times && typeof times === 'object' ? (times as Record<string, number>) : {};
  } catch {
    return {};
  }
}

/** Keeps this run's times beside the others' (written whole, then renamed: runs side by side never see half a file). */
function recordTimes(outcomes: Outcome[]): void {
  const times = readTimes();
  for (const outcome of outcomes) if (outcome.durationMs > 0) times[outcome.file] = outcome.durationMs;
  const partial = `${TIMES_FILE}.${process.pid}`;
  try {
    fs.writeFileSync(partial, JSON.stringify(times));
    fs.renameSync(partial, TIMES_FILE);
  } catch {
    fs.rmSync(partial, { force: true });
  }
}

/** Slowest first; a file never timed first of all (it may be slow, and it is new). */
function slowestFirst(files: TestFile[]): TestFile[] {
  const times = readTimes();
  const expected = (entry: TestFile) => times[entry.file] ?? Number.POSITIVE_INFINITY;
  return [...files].sort((a, b) => expected(b) - expected(a) || a.file.localeCompare(b.file));
}

/** A product of numeric literals, as timeouts are written (`20 * 60_000`). */
function milliseconds(expression: string, where: string): number {
  const factors = expression.split('*').map((part) => Number(part.trim().replaceAll('_', '')));
  if (factors.some((factor) => !Number.isFinite(factor))) {
    throw new Error(`${where}: write a test's timeout as deadline(<number> * <number>), not deadline(${expression})`);
  }
  return factors.reduce((product, factor) => product * factor, 1);
}

function classify(file: string): TestFile {
  const source = fs.readFileSync(file, 'utf8');
  // A bare number would not scale with the factor and the limit below could not see it.
  const bare = /\btimeout:\s*\d/.exec(source);
  if (bare) throw new Error(`${file}: a timeout written as a bare number (${bare[0]}…): use deadline() from test/support/deadline.ts`);
  let declaredMs = 0;
  for (const match of source.matchAll(/\btimeout:\s*deadline\(([^)]*)\)/g)) declaredMs += milliseconds(match[1] as string, file);
  const takesTurn = /support\/machine-lock\.js'/.test(source);
  return {
    file,
    tier: takesTurn ? 'images' : 'fast',
    limitMs: Math.min(FILE_CAP_MS, deadline(UNDECLARED_BASE_MS + declaredMs + (takesTurn ? TURN_TIMEOUT_MS : 0))),
  };
}

/** When the run's budget ends (ms since the epoch): RUN_BUDGET_MS after `.ci/run` started, or after now. */
function budgetEnd(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.BERTH_TEST_RUN_STARTED_AT;
  if (raw === undefined || raw.trim() === '') return Date.now() + RUN_BUDGET_MS;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds <= 0) throw new Error(`BERTH_TEST_RUN_STARTED_AT must be a time in Unix seconds, not ${JSON.stringify(raw)}`);
  return seconds * 1000 + RUN_BUDGET_MS;
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether the group is still there after a grace (tsx's esbuild helper ends just after node). */
async function outlives(pid: number): Promise<boolean> {
  for (const until = Date.now() + LEAK_GRACE_MS; Date.now() < until;) {
    if (!groupAlive(pid)) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return groupAlive(pid);
}

/** The processes of a group, as `pid command line`, from /proc (nothing where it is not there), so a leak says what leaked. */
function groupMembers(group: number): string[] {
  const members: string[] = [];
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return members;
  }
  for (const pid of entries) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After the command's closing parenthesis: state, ppid, pgrp.
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp !== group) continue;
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      members.push(`${pid} ${command.slice(0, 300)}`);
    } catch {
      // Gone meanwhile.
    }
  }
  return members;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}

/**
 * The CPU time of the children reaped since the last call, from this process's cumulative
 * child times (Linux's /proc/self/stat: a child's own and its waited-for descendants'). The
 * runner's only children are test files, and it reads this as each one's exit is reported,
 * so the difference is that file's; undefined where /proc is not there.
 */
const reapedChildrenCpu = (() => {
  const TICK_MS = 10; // USER_HZ is 100 on Linux
  const read = (): number | undefined => {
    try {
      const stat = fs.readFileSync('/proc/self/stat', 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[13]) + Number(fields[14])) * TICK_MS; // cutime and cstime
    } catch {
      return undefined;
    }
  };
  let last = read();
  return {
    take(): number | undefined {
      const now = read();
      const taken = now === undefined || last === undefined ? undefined : now - last;
      last = now;
      return taken;
    },
  };
})();

/** Process groups of the files running now: an interrupted run stops them too. */
const running = new Set<number>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const pid of running) signalGroup(pid, 'SIGKILL');
    process.kill(process.pid, signal);
  });
}

/** How node runs a test file: its compiled copy in this run's tree, or its source through tsx. */
function testProcessArguments(file: string, tree: TestTree | undefined, reporters: string[]): { command: string; args: string[]; cwd: string } {
  if (!tree) return { command: process.execPath, args: [...reporters, '--import', 'tsx', path.join(ROOT, file)], cwd: ROOT };
  return { command: process.execPath, args: [...reporters, '--enable-source-maps', path.join(tree.root, file.replace(/\.ts$/, '.js'))], cwd: tree.root };
}

async function runFile(entry: TestFile, stream: boolean, eventsDir: string, endsAt: number, tree: TestTree | undefined): Promise<Outcome> {
  const limitMs = Math.min(entry.limitMs, endsAt - Date.now());
  if (limitMs <= 0) {
    const problem = `not started: the run's budget of ${formatDuration(RUN_BUDGET_MS)} is spent`;
    process.stdout.write(`✖ ${entry.file}: ${problem}\n`);
    return {
      ...entry,
      limitMs: 0,
      code: null,
      durationMs: 0,
      cpuMs: undefined,
      counts: Object.fromEntries(COUNTS.map((name) => [name, 0])) as Record<Count, number>,
      problems: [problem],
      failures: [],
    };
  }
  const eventsFile = path.join(eventsDir, `${entry.file.replaceAll(path.sep, '_')}.jsonl`);
  const started = Date.now();
  const { command, args, cwd } = entry.command
    ? { command: entry.command[0] as string, args: entry.command.slice(1), cwd: ROOT }
    : testProcessArguments(entry.file, tree, [
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${REPORTER}`,
        `--test-reporter-destination=${eventsFile}`,
      ]);
  // Its own process group, so whatever the file starts can be stopped with it.
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child.pid as number);
  const output: Buffer[] = [];
  const collect = (chunk: Buffer) => (stream ? process.stdout.write(chunk) : output.push(chunk));
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const problems: string[] = [];
  let timedOut = false;
  const limit = setTimeout(() => {
    timedOut = true;
    signalGroup(child.pid as number, 'SIGTERM');
    setTimeout(() => signalGroup(child.pid as number, 'SIGKILL'), STOP_GRACE_MS).unref();
  }, limitMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  const cpuMs = reapedChildrenCpu.take();
  clearTimeout(limit);
  running.delete(child.pid as number);
  const durationMs = Date.now() - started;
  if (await outlives(child.pid as number)) {
    const left = groupMembers(child.pid as number);
    problems.push(`left processes running after it ended (stopped now)${left.length > 0 ? `:\n${left.map((line) => `    ${line}`).join('\n')}` : ''}`);
    signalGroup(child.pid as number, 'SIGKILL');
  }
  const events = fs.existsSync(eventsFile)
    ? fs
        .readFileSync(eventsFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as TestEvent)
    : [];
  const counts = Object.fromEntries(COUNTS.map((name) => [name, 0])) as Record<Count, number>;
  for (const { event, message } of events) {
    const [name, value] = (event === 'diagnostic' ? (message ?? '') : '').split(' ');
    if ((COUNTS as readonly string[]).includes(name as string)) counts[name as Count] = Number(value);
  }
  if (timedOut) {
    const unfinished: string[] = [];
    for (const { event, name, nesting } of events) {
      if (event === 'start') unfinished.push(`${'  '.repeat(nesting ?? 0)}${name}`);
      else if (event === 'end') unfinished.splice(unfinished.lastIndexOf(`${'  '.repeat(nesting ?? 0)}${name}`), 1);
    }
    problems.push(`stopped at its limit of ${formatDuration(limitMs)}; still running:\n${unfinished.join('\n') || '(no test had started)'}`);
  } else if (code !== 0 && counts.fail === 0 && counts.cancelled === 0) {
    problems.push(
      entry.command
        ? `exited with code ${code} (signal ${child.signalCode ?? 'none'})`
        : `exited with code ${code} (signal ${child.signalCode ?? 'none'}) with no failing test`,
    );
  }
  if (!stream) process.stdout.write(Buffer.concat(output));
  for (const problem of problems) process.stdout.write(`✖ ${entry.file}: ${problem}\n`);
  return { ...entry, limitMs, code, durationMs, cpuMs, counts, problems, failures: failuresOf(events) };
}

interface TestEvent {
  event: string;
  name?: string;
  nesting?: number;
  message?: string;
}

/**
 * The failed tests and hooks of a file, each named with the suites it ran in (those started
 * last at each lower nesting), and what was thrown. A suite that failed only because a test
 * in it did ("subtestsFailed") adds nothing and is left out.
 */
function failuresOf(events: TestEvent[]): Outcome['failures'] {
  const suites: string[] = [];
  const failures: Outcome['failures'] = [];
  for (const { event, name = '', nesting = 0, message = '' } of events) {
    if (event === 'start') suites.splice(nesting, suites.length, name);
    if (event !== 'fail' || message.startsWith('subtestsFailed')) continue;
    failures.push({ test: [...suites.slice(0, nesting), name].join(' > '), why: message });
  }
  return failures;
}

/** Lines of each failure's message and failures of the run repeated at the end of its output. */
const FAILURE_LINES = 30;
const FAILURES_REPEATED = 10;

/**
 * The failures again, last in the output: CI shows its end, after the table of times,
 * and a failure that happened once on a busy machine must be readable from there.
 */
function repeatFailures(outcomes: Outcome[]): void {
  const all = outcomes.flatMap((outcome) => outcome.failures.map((failure) => ({ file: outcome.file, ...failure })));
  if (all.length === 0) return;
  process.stdout.write(`\n# why they failed (${all.length > FAILURES_REPEATED ? `the first ${FAILURES_REPEATED} of ${all.length}` : all.length}):\n`);
  for (const { file, test, why } of all.slice(0, FAILURES_REPEATED)) {
    // Frames inside node's test runner say nothing about the failure.
    const lines = why.split('\n').filter((line) => !/^\s+at .*\(node:(internal|async_hooks)/.test(line));
    const shown = lines.slice(0, FAILURE_LINES).map((line) => `#     ${line}`);
    if (lines.length > FAILURE_LINES) shown.push(`#     (${lines.length - FAILURE_LINES} more lines)`);
    process.stdout.write(`# ✖ ${file}: ${test}\n${shown.join('\n')}\n`);
  }
}

async function runLanes(files: TestFile[], lanes: number, eventsDir: string, endsAt: number, tree: TestTree | undefined): Promise<Outcome[]> {
  const images = slowestFirst(files.filter((entry) => entry.tier === 'images'));
  const fast = slowestFirst(files.filter((entry) => entry.tier === 'fast'));
  const outcomes: Outcome[] = [];
  // Output of files run side by side is printed whole as each ends; a lone file streams.
  const stream = lanes === 1;
  const lane = async (takesImages: boolean) => {
    const next = () => (takesImages ? (images.shift() ?? fast.shift()) : fast.shift());
    for (let entry = next(); entry; entry = next()) {
      process.stdout.write(`▶ ${entry.file} (limit ${formatDuration(Math.max(0, Math.min(entry.limitMs, endsAt - Date.now())))})\n`);
      const outcome = await runFile(entry, stream, eventsDir, endsAt, tree);
      const passed = outcome.code === 0 && outcome.problems.length === 0;
      process.stdout.write(`${passed ? '■' : '✖'} ${entry.file} ${passed ? 'passed' : 'failed'} in ${formatDuration(outcome.durationMs)}\n`);
      outcomes.push(outcome);
      // Kept as each file ends, so that a run stopped early still orders the next one.
      recordTimes([outcome]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, files.length) }, (_, i) => lane(i === 0)));
  return outcomes;
}

function formatDuration(ms: number): string {
  return ms >= 120_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 1000).toFixed(1)} s`;
}

function laneCount(): number {
  const raw = process.env.BERTH_TEST_CONCURRENCY ?? '2';
  const lanes = Number(raw);
  if (!Number.isInteger(lanes) || lanes < 1) throw new Error(`BERTH_TEST_CONCURRENCY must be a whole number of at least 1, not ${JSON.stringify(raw)}`);
  return lanes;
}

async function main(): Promise<number> {
  const { roots, tiers, checks, list, source } = parseArguments(process.argv.slice(2));
  const factor = deadlineFactor();
  const files = [...discover(roots).map(classify), ...(checks ? [CHECKS] : [])].filter((entry) => tiers.includes(entry.tier));
  if (list) {
    for (const entry of files) process.stdout.write(`${entry.tier}\t${formatDuration(entry.limitMs)}\t${entry.file}\n`);
    return 0;
  }
  const endsAt = budgetEnd();
  const eventsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-test-events-'));
  const started = Date.now();
  const outcomes: Outcome[] = [];
  let tree: TestTree | undefined;
  try {
    tree = source ? undefined : await buildTestTree(ROOT);
    process.stdout.write(
      tree
        ? `== the files run compiled, from ${path.relative(ROOT, tree.root)}/ (built in ${formatDuration(Date.now() - started)})\n`
        : '== the files run from their TypeScript sources through tsx\n',
    );
    // What the runner reaped before the files (git listing the checkout) is no file's CPU.
    reapedChildrenCpu.take();
    const lanes = laneCount();
    const count = (tier: TestFile['tier']) => files.filter((entry) => entry.tier === tier).length;
    const left = formatDuration(Math.max(0, endsAt - Date.now()));
    process.stdout.write(
      `== ${files.length} files (image tier: ${count('images')}, first in the first lane; fast: ${count('fast')}), ${lanes} at a time, deadline factor ${factor}, ${left} of the budget left\n`,
    );
    outcomes.push(...(await runLanes(files, lanes, eventsDir, endsAt, tree)));
  } finally {
    fs.rmSync(eventsDir, { recursive: true, force: true });
    tree?.remove();
  }

  const failed = outcomes.filter((outcome) => outcome.code !== 0 || outcome.problems.length > 0);
  const width = Math.max(...outcomes.map((outcome) => outcome.file.length), 0);
  process.stdout.write('\n# time per file, slowest first: wall, CPU (tier, limit)\n');
  for (const outcome of [...outcomes].sort((a, b) => b.durationMs - a.durationMs)) {
    const mark = failed.includes(outcome) ? '✖' : ' ';
    const cpu = outcome.cpuMs === undefined ? '' : formatDuration(outcome.cpuMs);
    process.stdout.write(
      `# ${mark} ${formatDuration(outcome.durationMs).padStart(9)} ${cpu.padStart(9)}  ${outcome.file.padEnd(width)}  ${outcome.tier}, ${formatDuration(outcome.limitMs)}\n`,
    );
  }
  const cpuTotal = outcomes.reduce((sum, outcome) => sum + (outcome.cpuMs ?? 0), 0);
  process.stdout.write(`# CPU of all files ${formatDuration(cpuTotal)}, over ${formatDuration(Date.now() - started)}\n`);
  // The same closing lines node's own runner prints (CI reads `# pass` and `# fail`), summed;
  // a file that failed without a failing test (stopped, crashed, leaked) counts as a failure.
  const totals = Object.fromEntries(COUNTS.map((name) => [name, outcomes.reduce((sum, outcome) => sum + outcome.counts[name], 0)])) as Record<Count, number>;
  totals.fail += failed.filter((outcome) => outcome.problems.length > 0).length;
  for (const name of COUNTS) process.stdout.write(`# ${name} ${totals[name]}\n`);
  process.stdout.write(`# duration_ms ${Date.now() - started}\n`);
  repeatFailures(outcomes);
  if (failed.length > 0) process.stdout.write(`# failed files: ${failed.map((outcome) => outcome.file).join(', ')}\n`);
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = await main();
