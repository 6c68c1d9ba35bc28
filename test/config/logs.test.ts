import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { whereToGoNext, readyBanner } from '../../src/startup-guide.js';

const run = promisify(execFile);
const LOGGER = new URL('../../src/logger.ts', import.meta.url).href;

/** What a process logging one line with a secret-bearing field prints in `format`. */
async function printed(format: string): Promise<string> {
  const script = `import { createLogger } from '${LOGGER}'; createLogger('info', '${format}').info({ req: { headers: { authorization: 'Bearer hunter2' } }, revision: 'r1' }, 'revision deployed');`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
  return stdout;
}

test('pretty logs are readable lines, not JSON, and still redact credentials', async () => {
  const out = await printed('pretty');
  assert.match(out, /INFO.*revision deployed/);
  assert.throws(() => JSON.parse(out.trim()), 'a pretty line is not a JSON object');
  assert.doesNotMatch(out, /hunter2/);
  assert.doesNotMatch(out, /\u001b\[/, 'no colour codes when the output is not a terminal');
});

test('JSON logs stay one object per line, and auto means JSON when the output is not a terminal', async () => {
  for (const format of ['json', 'auto']) {
    const line = JSON.parse((await printed(format)).trim());
    assert.equal(line.msg, 'revision deployed');
    assert.equal(line.req.headers.authorization, '[redacted]');
  }
});

test('the start-up guide names the API, its reference and the generated key file, never the key', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-guide-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  assert.deepEqual(whereToGoNext('http://0.0.0.0:8124', dir), {
    api: 'http://127.0.0.1:8124',
    dashboard: 'http://127.0.0.1:8124/',
    docs: 'http://127.0.0.1:8124/docs',
  });
  await writeFile(path.join(dir, 'bootstrap-api-key'), 'berth_secret\n');
  const next = whereToGoNext('http://127.0.0.1:8124', dir);
  assert.equal(next.keyFile, path.join(dir, 'bootstrap-api-key'));
  const banner = readyBanner(next);
  assert.match(banner, /Berth is ready at http:\/\/127\.0\.0\.1:8124/);
  assert.match(banner, /Dashboard: +http:\/\/127\.0\.0\.1:8124\//);
  assert.match(banner, /\$\(cat .*bootstrap-api-key\)/);
  assert.doesNotMatch(banner, /berth_secret/);
});
