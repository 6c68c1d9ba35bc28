import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { OutputLines } from './output-lines.js';
import type { BuildLog, ResolvedBuilder } from './types.js';

/** How long a stopped builder gets to clean up after SIGTERM before the group is killed. */
export const STOP_GRACE_MS = 10_000;
/** How long to wait for the killed group's last members to vanish. */
const GROUP_EXIT_WAIT_MS = 5_000;

export interface GroupRunOptions {
  log: BuildLog;
  signal?: AbortSignal;
  cwd?: string;
  /** Added to the builder's environment for this run. */
  extraEnv?: Record<string, string>;
  stopGraceMs?: number;
  /** `cgroup.procs` files the builder joins before it starts (the build sandbox's limits). */
  cgroupProcs?: readonly string[];
}

export interface GroupRunResult {
  /** Exit code, or null when a signal ended the builder. */
  code: number | null;
  aborted: boolean;
  /** The last lines of output, oldest first. */
  tail: string[];
  /** Set when the program could not start at all. */
  spawnError?: NodeJS.ErrnoException;
}

/**
 * Runs the builder in a process group of its own, streaming every output line to `log`.
 * On abort the whole group gets SIGTERM (buildah then removes its working containers),
 * then SIGKILL after the grace period; it resolves only once no process of the group is
 * left and every line has been logged. Arguments must never carry secrets: argv is visible
 * to every user of the machine.
 */
export async function runInProcessGroup(builder: ResolvedBuilder, args: string[], options: GroupRunOptions): Promise<GroupRunResult> {
  const lines = new OutputLines(options.log);
  if (options.signal?.aborted) return { code: null, aborted: true, tail: [] };

  // One pipe for stdout and stderr keeps the lines in the order the builder wrote them (two
  // pipes are read independently, so its error line could come before the output that led
  // to it). buildah itself relays a RUN step's stdout and stderr separately, so their
  // relative order within a step is not guaranteed. The shell replaces itself with the
  // builder: no extra process.
  const child = spawn('/bin/sh', launchArgs(builder, args, options.cgroupProcs ?? []), {
    cwd: options.cwd,
    env: options.extraEnv ? { ...builder.env, ...options.extraEnv } : builder.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; spawnError?: NodeJS.ErrnoException }>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ code: null, spawnError: error }));
    // 'close' waits for the output streams too, so no line is missed.
    child.once('close', (code) => resolve({ code }));
  });
  if (child.stdout) lines.follow(child.stdout);
  if (child.stderr) lines.follow(child.stderr);

  const pgid = child.pid;
  let aborted = false;
  let killTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    if (pgid === undefined || aborted) return;
    aborted = true;
    signalGroup(pgid, 'SIGTERM');
    killTimer = setTimeout(() => signalGroup(pgid, 'SIGKILL'), options.stopGraceMs ?? STOP_GRACE_MS);
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });

  try {
    const { code, spawnError } = await exited;
    // Children the builder left behind (or that outlived its kill) must not keep running.
    if (pgid !== undefined) await reapGroup(pgid);
    await lines.flushed();
    return { code, aborted, tail: lines.tail(), spawnError };
  } finally {
    clearTimeout(killTimer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The shell that starts the builder: it joins the given control groups while it is still
 * the only process (so nothing the build starts escapes their limits), drops to the
 * sandbox's user when there is one, and replaces itself with the builder.
 */
function launchArgs(builder: ResolvedBuilder, args: string[], cgroupProcs: readonly string[]): string[] {
  const join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@" 2>&1';
  const drop = builder.runAs ? ['setpriv', `--reuid=${builder.runAs.uid}`, `--regid=${builder.runAs.gid}`, '--clear-groups', '--'] : [];
  return ['-c', join, 'berth-build', ...cgroupProcs, '--', ...drop, builder.binary, ...(builder.globalArgs ?? []), ...args];
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is already gone.
  }
}

/** Kills what is left of the group and waits until none of it runs (zombies aside). */
async function reapGroup(pgid: number): Promise<void> {
  if ((await liveGroupMembers(pgid)) === 0) return;
  signalGroup(pgid, 'SIGKILL');
  const deadline = Date.now() + GROUP_EXIT_WAIT_MS;
  while (Date.now() < deadline && (await liveGroupMembers(pgid)) > 0) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Counts the processes of a group that are not zombies. Zombies count as gone: a killed
 * grandchild re-parented to a PID 1 that never reaps stays one forever. Without /proc
 * (not Linux) it falls back to whether the group can be signalled at all.
 */
export async function liveGroupMembers(pgid: number): Promise<number> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    try {
      process.kill(-pgid, 0);
      return 1;
    } catch {
      return 0;
    }
  }
  let live = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') live++;
  }
  return live;
}
