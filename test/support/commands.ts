import { spawn } from 'node:child_process';

export interface CommandOutcome {
  code: number | null;
  /** stdout and stderr interleaved, as a person would have seen them. */
  output: string;
  stdout: string;
}

export interface RunOptions {
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Throw (with the command's last output) unless it exits 0. Default true. */
  check?: boolean;
}

/** Output kept per command: enough to say why a build failed without holding a whole build log. */
const KEPT_CHARACTERS = 64 * 1024;

/**
 * Runs a command in its own process group; on abort the whole group is killed (buildah and
 * podman start children of their own), so nothing outlives a test that gave up.
 */
export function runCommand(command: string, args: readonly string[], options: RunOptions = {}): Promise<CommandOutcome> {
  const { signal, check = true } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stdout = '';
    const keep = (text: string) => (text.length > KEPT_CHARACTERS ? text.slice(-KEPT_CHARACTERS) : text);
    child.stdout.on('data', (chunk: Buffer) => {
      output = keep(output + chunk.toString());
      stdout = keep(stdout + chunk.toString());
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output = keep(output + chunk.toString());
    });
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    signal?.addEventListener('abort', kill, { once: true });
    child.once('error', (error) => {
      signal?.removeEventListener('abort', kill);
      reject(new Error(`could not run ${command}: ${error.message}`));
    });
    child.once('close', (code) => {
      signal?.removeEventListener('abort', kill);
      if (signal?.aborted) return reject(signal.reason);
      if (check && code !== 0) return reject(new Error(`${command} ${args[0] ?? ''} exited with ${code}:\n${output.slice(-4000)}`));
      resolve({ code, output, stdout });
    });
  });
}
