import { execFile } from 'node:child_process';
import type { ResolvedBuilder } from './types.js';

export interface CommandOutput {
  code: number;
  stdout: string;
  stderr: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Runs a short builder command (info, inspect, list, remove) and collects its output.
 * Never rejects: a program that cannot run reports a non-zero code and a reason in
 * `stderr`, not the command line (which error messages of node:child_process quote).
 */
export function runBuilderCommand(
  builder: Pick<ResolvedBuilder, 'binary' | 'env' | 'globalArgs' | 'runAs'>,
  args: string[],
  options: { signal?: AbortSignal; timeoutMs?: number; input?: string } = {},
): Promise<CommandOutput> {
  return new Promise((resolve) => {
    const child = execFile(
      builder.binary,
      [...(builder.globalArgs ?? []), ...args],
      {
        env: builder.env,
        ...(builder.runAs ? { uid: builder.runAs.uid, gid: builder.runAs.gid } : {}),
        signal: options.signal,
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        const failure = error as NodeJS.ErrnoException & { code?: number | string; killed?: boolean };
        if (typeof failure.code === 'number') return resolve({ code: failure.code, stdout, stderr });
        const why = failure.code === 'ENOENT' ? `${builder.binary} was not found` : failure.killed ? 'it did not answer in time' : 'it could not run';
        resolve({ code: -1, stdout: stdout ?? '', stderr: stderr || why });
      },
    );
    // A program that exits before reading all of it closes the pipe: that is its answer, not ours to report.
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.input ?? '');
  });
}

/** The last non-empty line of a failed command, for messages. */
export function lastOutputLine(output: CommandOutput): string {
  const line = (output.stderr || output.stdout)
    .split('\n')
    .map((text) => text.trim())
    .filter(Boolean)
    .at(-1);
  return (line ?? `exit code ${output.code}`).replace(/^(Error|error):\s*/, '').slice(0, 500);
}
