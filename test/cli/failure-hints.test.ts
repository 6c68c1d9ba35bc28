import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BerthApiError } from '../../src/client/index.js';
import { reportFailure } from '../../src/cli/errors.js';
import type { CliIo } from '../../src/cli/io.js';

function printed(error: unknown): { stderr: string; code: number } {
  let stderr = '';
  const io: CliIo = { out: () => {}, err: (text) => (stderr += text), isTTY: false, env: {}, status: () => {} };
  return { code: reportFailure(io, error), stderr };
}

test('a database out of reach is said to be passing, with when to try again; any other server failure points at the logs', () => {
  const unavailable = printed(new BerthApiError(503, 'database_unavailable', 'The database is unavailable.', 'listDeployments', 1));
  assert.match(unavailable.stderr, /listDeployments was refused \(503 database_unavailable\): The database is unavailable\.\n {2}try: .*try again in 1 s/);
  const failed = printed(new BerthApiError(500, 'internal_error', 'Internal Server Error', 'listDeployments'));
  assert.match(failed.stderr, /try: Berth failed; its logs say why/);
});
