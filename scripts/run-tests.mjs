#!/usr/bin/env node
// Runs every test file under test/ with node's test runner (Node 20 does not expand globs).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const roots = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['test'];
// `npm test` runs the listener's suite as its own step (`npm run test:listener`, as CI
// names it), so the run over all of test/ leaves it out unless it is asked for.
const separate = process.argv.slice(2).length > 0 ? new Set() : new Set([path.join('test', 'listener')]);
const files = [];
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (separate.has(full)) continue;
    if (entry.isDirectory()) walk(full);
    else if (entry.name.endsWith('.test.ts')) files.push(full);
  }
};
for (const root of roots) {
  if (fs.statSync(root).isDirectory()) walk(root);
  else files.push(root);
}
files.sort();
// A test that hangs fails by name after 5 minutes instead of holding CI until its limit.
// (A failing `assert.ok(value)` without a message can spin for minutes: node parses the
// TypeScript source of the call site to write the message.)
const perTestTimeoutMs = 5 * 60 * 1000;
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', `--test-timeout=${perTestTimeoutMs}`, ...files], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
