/**
 * Writes the README's configuration table from the environment schema (src/environment.ts):
 * `npm run docs:config` replaces the table in README.md (`-- --print` prints it instead).
 * test/config/environment.test.ts checks that the README holds exactly this table.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { ENVIRONMENT } from '../src/environment.js';

const HEADER = '| variable | default | meaning |';

export function configurationTable(): string {
  const rows = Object.entries(ENVIRONMENT.properties as unknown as Record<string, { default?: unknown; defaultText?: string; description: string }>).map(
    ([name, schema]) =>
      `| \`${name}\` | ${schema.default !== undefined ? `\`${String(schema.default)}\`` : `(${schema.defaultText ?? 'none'})`} | ${schema.description} |`,
  );
  return [HEADER, '|---|---|---|', ...rows].join('\n');
}

/** The README with its configuration table (the block of table lines under HEADER) replaced. */
function withTable(readme: string, table: string): string {
  const lines = readme.split('\n');
  const start = lines.indexOf(HEADER);
  if (start < 0) throw new Error(`README.md has no line "${HEADER}"`);
  let end = start;
  while (end < lines.length && lines[end]?.startsWith('|')) end++;
  return [...lines.slice(0, start), table, ...lines.slice(end)].join('\n');
}

if (process.argv[1]?.endsWith('config-table.ts')) {
  if (process.argv.includes('--print')) process.stdout.write(`${configurationTable()}\n`);
  else writeFileSync('README.md', withTable(readFileSync('README.md', 'utf8'), configurationTable()));
}
