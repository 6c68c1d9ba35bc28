#!/usr/bin/env node
// The compiled server: `npm install` and `npm start` build it (`npm run build`).
import fs from 'node:fs';

const compiled = new URL('../dist/main.js', import.meta.url);
if (!fs.existsSync(compiled)) {
  process.stderr.write('berth: dist/main.js is missing; run `npm run build` in the Berth checkout first\n');
  process.exit(1);
}
await import(compiled.href);
