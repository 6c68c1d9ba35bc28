import { execFile } from 'node:child_process';

export type ContainerRuntimeKind = 'podman' | 'docker';

export interface ResolvedRuntime {
  kind: ContainerRuntimeKind;
  binary: string;
  env: NodeJS.ProcessEnv;
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
  /** Set when the command could not run at all (missing binary, killed by timeout or signal). */
  failure?: 'not-found' | 'timeout' | 'aborted' | 'error';
}

export interface CommandOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Added to the runtime's environment for this command only. */
  extraEnv?: Record<string, string>;
}

export const COMMAND_TIMEOUT_MS = 60_000;

export function runCommand(runtime: ResolvedRuntime, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
  const env = options.extraEnv ? { ...runtime.env, ...options.extraEnv } : runtime.env;
  return new Promise((resolve) => {
    execFile(
      runtime.binary,
      args,
      {
        env,
        signal: options.signal,
        timeout: options.timeoutMs ?? COMMAND_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        const failure = error as NodeJS.ErrnoException & { code?: number | string; killed?: boolean; signal?: string };
        let kind: CommandResult['failure'];
        if (failure.code === 'ENOENT') kind = 'not-found';
        else if (failure.name === 'AbortError' || options.signal?.aborted) kind = 'aborted';
        else if (failure.killed) kind = 'timeout';
        else if (typeof failure.code !== 'number') kind = 'error';
        // Never pass on error.message: it quotes the whole command line.
        const fallback =
          kind === 'not-found'
            ? `${runtime.binary} was not found`
            : kind
              ? `the command ${kind === 'error' ? 'could not run' : kind === 'timeout' ? 'timed out' : 'was aborted'}`
              : '';
        resolve({ code: typeof failure.code === 'number' ? failure.code : -1, stdout: stdout ?? '', stderr: stderr || fallback, failure: kind });
      },
    );
  });
}

export function lastLine(result: CommandResult): string {
  const lines = (result.stderr || result.stdout)
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const line = lines.at(-1) ?? `exit code ${result.code}`;
  return line
    .replace(/^Error:\s*/, '')
    .replace(/[.\s]+$/, '')
    .slice(0, 500);
}
