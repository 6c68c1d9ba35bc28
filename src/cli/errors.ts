/** What the CLI prints when a command fails: what failed, the server's `detail`, and what to try. */
import { BerthApiError } from '../client/index.js';
import { CliExit, EXIT, type CliIo } from './io.js';

function hintFor(error: BerthApiError): string {
  switch (error.status) {
    case 0:
      return 'check the URL (--url, BERTH_URL or `berth login`) and that Berth is running';
    case 401:
      return 'check the API key (BERTH_API_KEY or `berth login`); it may have been revoked';
    case 403:
      return 'this needs a key allowed to do it (an admin key), or a --tenant-id the key may use';
    case 404:
      return 'check the id or name; the matching `list` command shows what exists';
    case 409:
      return 'the resource is in a state that does not allow this now; `get` it to see its state';
    case 429:
      return 'too many requests: wait a little and try again';
    case 503:
      return `Berth cannot serve this right now (its database is out of reach, or it is busy): try again${error.retryAfterSeconds === undefined ? '' : ` in ${error.retryAfterSeconds} s`}; if it lasts, its logs say why`;
    default:
      return error.status >= 500 ? 'Berth failed; its logs say why' : 'check the values given (`--help` lists the options)';
  }
}

/** Prints a failure and returns the exit code: refusals and bad usage are 3, an unreachable server 1. */
export function reportFailure(io: CliIo, error: unknown): number {
  if (error instanceof CliExit) {
    io.err(`berth: ${error.message}\n${error.hint ? `  try: ${error.hint}\n` : ''}`);
    return error.exitCode;
  }
  if (error instanceof BerthApiError) {
    const what = error.status === 0 ? `${error.operation} failed` : `${error.operation} was refused (${error.status} ${error.code})`;
    io.err(`berth: ${what}: ${error.detail}\n  try: ${hintFor(error)}\n`);
    return error.status === 0 ? EXIT.failed : EXIT.usage;
  }
  io.err(`berth: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT.failed;
}
