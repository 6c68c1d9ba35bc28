/** Rendering of read results: `--output table|json|yaml`. */
import yaml from 'js-yaml';
import type { CliIo } from './io.js';

export type OutputFormat = 'table' | 'json' | 'yaml';
export const OUTPUT_FORMATS: OutputFormat[] = ['table', 'json', 'yaml'];

/** A column: its header and how to read it from a row. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- user-given JSON and commander options are untyped
export type Column = [header: string, read: (row: any) => unknown];

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value).replace(/\s+/g, ' ');
};

export function table(rows: readonly unknown[], columns: readonly Column[]): string {
  const cells = [columns.map(([header]) => header), ...rows.map((row) => columns.map(([, read]) => cell(read(row))))];
  const widths = columns.map((_, index) => Math.max(...cells.map((line) => line[index]!.length)));
  return cells.map((line) => line.map((text, index) => (index === line.length - 1 ? text : text.padEnd(widths[index]!))).join('  ')).join('\n') + '\n';
}

/** Prints a value (a list of rows or one resource) in the chosen format. */
export function render(io: CliIo, format: OutputFormat, value: unknown, columns: readonly Column[]): void {
  if (format === 'json') return io.out(`${JSON.stringify(value, null, 2)}\n`);
  if (format === 'yaml') return io.out(yaml.dump(value, { noRefs: true, lineWidth: 160 }));
  if (Array.isArray(value)) {
    if (value.length === 0) return io.out('(none)\n');
    return io.out(table(value, columns));
  }
  // One resource: one field per line.
  const entries = Object.entries((value ?? {}) as Record<string, unknown>);
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  io.out(entries.map(([key, field]) => `${key.padEnd(width)}  ${cell(field)}`).join('\n') + '\n');
}
