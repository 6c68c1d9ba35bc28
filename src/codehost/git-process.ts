import { spawn } from 'node:child_process';
import { CodehostError } from './errors.js';
import { gitSlots } from './git-slots.js';
import type { LogLine } from './types.js';

export interface GitCommand {
  args: string[];
  env: NodeJS.ProcessEnv;
  scrub: (text: string) => string;
  /** Says what git is doing, for the abort message: "fetching https://host/o/r". */
  activity: string;
  cwd?: string;
  signal?: AbortSignal;
  /** Receives each line git writes to stderr (progress included), scrubbed. */
  onLine?: LogLine;
  /** Output beyond this is an error (a runaway ls-remote); 64 MiB unless given. */
  maxStdoutBytes?: number;
  /**
   * How long git may run, from its start (not counting the wait for a slot), before its
   * process group is killed and the command fails with a `timeout` CodehostError. Commands
   * that ask a remote get one; the others are bounded by `signal` (a build's timeout).
   */
  timeoutMs?: number;
}

export interface GitResult {
  code: number;
  stdout: string;
  /** The last lines git wrote to stderr, scrubbed: what an error message quotes. */
  stderrTail: string[];
}

const TAIL_LINES = 20;

/**
 * The transports git may use, as GIT_ALLOW_PROTOCOL (which overrides any `protocol.*`
 * config): https, http, ssh and git, plus `file` only where local repositories are
 * allowed. Anything else (the `ext` and `fd` remote helpers, other helpers) is refused by
 * git itself, for the remote, a redirect or a submodule alike, so a URL that got past
 * parseRepositoryUrl (stored before a rule existed, say) still cannot use them.
 */
export function allowedProtocols(allowLocal: boolean): string {
  return allowLocal ? 'https:http:ssh:git:file' : 'https:http:ssh:git';
}

/**
 * Runs git without a shell, restricted to the allowed transports (allowedProtocols), once
 * one of the process's git slots is free (git-slots.ts). git is its own process group
 * (detached), so an abort or the timeout kills every helper it started as well
 * (git-remote-https, index-pack, ssh); the promise settles only once git has exited, so
 * callers can remove files it was writing.
 */
export async function runGit(command: GitCommand): Promise<GitResult> {
  if (command.signal?.aborted) throw aborted(command.activity);
  let release: () => void;
  try {
    release = await gitSlots.acquire(command.signal);
  } catch {
    throw aborted(command.activity);
  }
  const deadline = command.timeoutMs === undefined ? undefined : AbortSignal.timeout(command.timeoutMs);
  const signal = deadline && command.signal ? AbortSignal.any([command.signal, deadline]) : (deadline ?? command.signal);
  try {
    return await spawnGit(command, signal);
  } catch (error) {
    if (deadline?.aborted && !command.signal?.aborted) {
      throw new CodehostError('timeout', `git: no result within ${Math.ceil((command.timeoutMs ?? 0) / 1000)} s while ${command.activity}; stopped`);
    }
    throw error;
  } finally {
    release();
  }
}

function spawnGit(command: GitCommand, signal: AbortSignal | undefined): Promise<GitResult> {
  if (signal?.aborted) return Promise.reject(aborted(command.activity));
  return new Promise((resolve, reject) => {
    const child = spawn('git', command.args, {
      cwd: command.cwd,
      // A session says whether `file` is allowed; without one, only network transports are.
      env: { ...command.env, GIT_ALLOW_PROTOCOL: command.env.GIT_ALLOW_PROTOCOL ?? allowedProtocols(false) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let overflow = false;
    const tail: string[] = [];
    const lines = new StderrLines((line) => {
      const clean = command.scrub(line);
      tail.push(clean);
      if (tail.length > TAIL_LINES) tail.shift();
      command.onLine?.(clean);
    });
    const killTree = () => {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const onAbort = () => killTree();
    signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > (command.maxStdoutBytes ?? 64 * 1024 * 1024)) {
        overflow = true;
        killTree();
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
    child.once('error', (error: NodeJS.ErrnoException) => {
      signal?.removeEventListener('abort', onAbort);
      if (error.code === 'ENOENT') reject(new CodehostError('git-missing', 'git is not installed on this machine (or not on PATH): install git 2.31 or newer'));
      else reject(new CodehostError('failed', `git could not be started: ${error.code ?? error.message}`));
    });
    child.once('close', (code) => {
      signal?.removeEventListener('abort', onAbort);
      lines.end();
      if (signal?.aborted) return reject(aborted(command.activity));
      if (overflow) return reject(new CodehostError('too-large', `git: too much output while ${command.activity}`));
      resolve({ code: code ?? -1, stdout: Buffer.concat(stdout).toString('utf8'), stderrTail: tail });
    });
  });
}

function aborted(activity: string): CodehostError {
  return new CodehostError('aborted', `git: aborted while ${activity}`);
}

/**
 * Splits git's stderr into lines. Progress meters rewrite one line with `\r`; of those,
 * only a new phase or a step of at least 10 % is passed on, so a clone logs a handful of
 * progress lines rather than hundreds.
 */
class StderrLines {
  private buffer = '';
  private lastPhase = '';
  private lastPercent = -1;

  constructor(private readonly emit: (line: string) => void) {}

  push(text: string): void {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.take(line, match[0] === '\r');
    }
    // A line without an end for this long is not progress: pass it on in pieces.
    if (this.buffer.length > 16 * 1024) {
      this.take(this.buffer, false);
      this.buffer = '';
    }
  }

  end(): void {
    if (this.buffer) this.take(this.buffer, false);
    this.buffer = '';
  }

  private take(raw: string, isProgressUpdate: boolean): void {
    const line = raw.trimEnd();
    if (line.trim() === '') return;
    const progress = /^(.*?):\s+(\d{1,3})% \(/.exec(line);
    if (progress) {
      const phase = progress[1] as string;
      const percent = Number(progress[2]);
      const newPhase = phase !== this.lastPhase;
      if (isProgressUpdate && !newPhase && percent < this.lastPercent + 10) return;
      this.lastPhase = phase;
      this.lastPercent = percent;
    }
    this.emit(line);
  }
}
