import { type ChildProcess, execFile } from 'node:child_process';

/** A container tool as found on this machine (podman, buildah or docker), ready to run. */
export interface ResolvedTool {
  /** Absolute path of the program. */
  binary: string;
  /** The environment it runs with (for buildah and podman, Berth's containers.conf). */
  env: NodeJS.ProcessEnv;
  /** Arguments before the subcommand (the build sandbox's storage of one workspace). */
  globalArgs?: readonly string[];
  /** Runs the program as this unprivileged user (the build sandbox's) instead of as Berth. */
  runAs?: { uid: number; gid: number };
}

export interface CommandOutput {
  code: number;
  stdout: string;
  stderr: string;
  /** Set when the command could not run to its end (missing binary, killed by the timeout or the signal). */
  failure?: 'not-found' | 'timeout' | 'aborted' | 'error';
}

export interface CommandOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Written to the program's standard input, which is closed after it. */
  input?: string;
  /** Added to the tool's environment for this command only. */
  extraEnv?: Record<string, string>;
}

export const COMMAND_TIMEOUT_MS = 60_000;

const FALLBACK: Record<NonNullable<CommandOutput['failure']>, string> = {
  'not-found': 'was not found',
  timeout: 'the command timed out',
  aborted: 'the command was aborted',
  error: 'the command could not run',
};

/** Tool commands in flight, so that a process that stops can end them instead of leaving them to run on without it. */
const inFlight = new Set<ChildProcess>();
let killedAtExit = false;

function track(child: ChildProcess): void {
  if (child.pid === undefined) return;
  inFlight.add(child);
  child.once('exit', () => inFlight.delete(child));
  if (killedAtExit) return;
  killedAtExit = true;
  // However the process ends (a stop that overran its grace, an uncaught error), no command it started outlives it.
  process.once('exit', () => {
    for (const running of inFlight) running.kill('SIGKILL');
  });
}

/**
 * Ends the tool commands still running: each gets `graceMs` to finish on its own, then SIGKILL.
 * For a process that stops: a probe or an inspect it started would otherwise outlive it, for
 * up to its timeout, holding the image store's lock.
 */
export async function endRunningTools(graceMs: number): Promise<void> {
  const running = [...inFlight];
  if (running.length === 0) return;
  const exited = running.map(
    (child) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()))),
  );
  const timer = setTimeout(() => {
    for (const child of running) child.kill('SIGKILL');
  }, graceMs);
  try {
    await Promise.all(exited);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs a short tool command (info, inspect, list, run -d, remove) and collects its output.
 * Never rejects: a program that cannot run reports a non-zero code and a reason in `stderr`,
 * never the command line (which node:child_process's error messages quote, secrets and all).
 */
export function runTool(tool: ResolvedTool, args: readonly string[], options: CommandOptions = {}): Promise<CommandOutput> {
  return new Promise((resolve) => {
    const child = execFile(
      tool.binary,
      [...(tool.globalArgs ?? []), ...args],
      {
        env: options.extraEnv ? { ...tool.env, ...options.extraEnv } : tool.env,
        ...(tool.runAs ? { uid: tool.runAs.uid, gid: tool.runAs.gid } : {}),
        signal: options.signal,
        timeout: options.timeoutMs ?? COMMAND_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        const failed = error as NodeJS.ErrnoException & { code?: number | string; killed?: boolean };
        let failure: CommandOutput['failure'];
        if (failed.code === 'ENOENT') failure = 'not-found';
        else if (failed.name === 'AbortError' || options.signal?.aborted) failure = 'aborted';
        else if (failed.killed) failure = 'timeout';
        else if (typeof failed.code !== 'number') failure = 'error';
        const fallback = failure === 'not-found' ? `${tool.binary} ${FALLBACK[failure]}` : failure ? FALLBACK[failure] : '';
        resolve({ code: typeof failed.code === 'number' ? failed.code : -1, stdout: stdout ?? '', stderr: stderr || fallback, failure });
      },
    );
    track(child);
    // A program that exits before reading all of it closes the pipe: that is its answer, not ours to report.
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.input ?? '');
  });
}

/** The last non-empty line of a failed command, for messages, without the tool's `Error:`. */
export function lastOutputLine(output: CommandOutput): string {
  const line = (output.stderr || output.stdout)
    .split('\n')
    .map((text) => text.trim())
    .filter(Boolean)
    .at(-1);
  return (line ?? `exit code ${output.code}`).replace(/^(Error|error):\s*/, '').slice(0, 500);
}

/** The same without its closing period, for a message that goes on after it. */
export function lastOutputClause(output: CommandOutput): string {
  return lastOutputLine(output).replace(/[.\s]+$/, '');
}
