import type { StepContext } from '../driver.js';
import { lastOutputClause, runTool } from '../commands.js';
import { type ResolvedRuntime } from '../detect.js';
import { safeLog } from './step.js';

const LOG_TAIL_LINES = 50;
/** Shorter values are too likely to be ordinary words ("true", "info") to redact from logs. */
const MIN_REDACTED_LENGTH = 8;

export function secretValues(env: Record<string, string>): string[] {
  return [...new Set(Object.values(env).filter((value) => value.length >= MIN_REDACTED_LENGTH))].sort((a, b) => b.length - a.length);
}

export function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) {
    out = out.split(secret).join('[redacted]');
    // JSON log lines (the agent servers') quote a value with quotes or newlines escaped.
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) out = out.split(escaped).join('[redacted]');
  }
  return out;
}

/**
 * Copies the container's last output into the deploy log: stdout as INFO, stderr as ERROR, in
 * order. Answers the lines copied (redacted), for a failure to quote.
 */
export async function captureLogs(runtime: ResolvedRuntime, name: string, secrets: string[], context: StepContext, expected: boolean): Promise<string[]> {
  const result = await runTool(runtime, ['logs', '--timestamps', '--tail', String(LOG_TAIL_LINES), name]);
  if (result.code !== 0) {
    if (expected) await safeLog(context, 'WARNING', `Could not read the container's output: ${lastOutputClause(result)}`);
    return [];
  }
  const lines = [
    ...timestamped(result.stdout).map((line) => ({ ...line, level: 'INFO' as const })),
    ...timestamped(result.stderr).map((line) => ({ ...line, level: 'ERROR' as const })),
  ]
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    .slice(-LOG_TAIL_LINES);
  if (lines.length === 0) {
    await safeLog(context, 'INFO', `Container ${name} wrote no output`);
    return [];
  }
  await safeLog(context, 'INFO', `Last ${lines.length} line(s) of output from container ${name}:`);
  const redacted = lines.map((line) => ({ ...line, text: redact(line.text, secrets) }));
  for (const line of redacted) await safeLog(context, line.level, `[container] ${line.text}`);
  return redacted.map((line) => line.text);
}

function timestamped(output: string): { at: string; text: string }[] {
  return output
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const match = /^(\d{4}-\d{2}-\d{2}T\S+)\s(.*)$/.exec(line);
      // Nanosecond timestamps of equal width compare correctly as strings.
      return match ? { at: match[1] ?? '', text: match[2] ?? '' } : { at: '', text: line };
    });
}
