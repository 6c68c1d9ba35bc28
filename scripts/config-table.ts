/**
 * Prints the README's configuration table from the environment schema (src/environment.ts):
 * `npm run docs:config`. test/config.test.ts checks that the README holds exactly this table.
 */
import { ENVIRONMENT } from '../src/environment.js';

export function configurationTable(): string {
  const rows = Object.entries(ENVIRONMENT.properties as unknown as Record<string, { default?: unknown; defaultText?: string; description: string }>).map(
    ([name, schema]) =>
      `| \`${name}\` | ${schema.default !== undefined ? `\`${String(schema.default)}\`` : `(${schema.defaultText ?? 'none'})`} | ${schema.description} |`,
  );
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

if (process.argv[1]?.endsWith('config-table.ts')) process.stdout.write(`${configurationTable()}\n`);
