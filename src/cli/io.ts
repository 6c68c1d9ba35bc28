/** Where the CLI writes and what it reads of its surroundings; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Whether stdout is a terminal (live progress lines are drawn only there). */
  isTTY: boolean;
  env: NodeJS.ProcessEnv;
  /** Rewrites the current terminal line (progress); a no-op where stdout is no terminal. */
  status(text: string): void;
}

export function processIo(): CliIo {
  const isTTY = process.stdout.isTTY === true;
  // `berth deploy --json | head -1`: once the reader has gone, there is nobody to tell.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    isTTY,
    env: process.env,
    status: (text) => {
      if (isTTY) process.stdout.write(`\r\x1b[2K${text.slice(0, Math.max(20, (process.stdout.columns ?? 80) - 1))}`);
    },
  };
}

/** Ends the command with an exit code and a message (what failed, and what to try). */
export class CliExit extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** Exit codes of the client commands (README, "The berth CLI"). */
export const EXIT = { ok: 0, failed: 1, timeout: 2, usage: 3 } as const;
