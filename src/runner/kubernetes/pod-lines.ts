import type { BuiltImage, LogLevel } from '../../engine/drivers/types.js';

/**
 * What the builder pod writes on its standard output, one JSON object a line: a log line
 * (`{"level", "message"}`), or, last, the result (`{"result": {image, digest, commit_sha, env}}`).
 * The runner reads the lines from the pod's log; anything else (a line the builder image
 * printed itself) is relayed as an INFO line.
 */
export type PodLine = { kind: 'log'; level: LogLevel; message: string } | { kind: 'result'; result: BuiltImage };

const LEVELS = new Set<LogLevel>(['DEBUG', 'INFO', 'WARNING', 'ERROR']);

export function logLine(level: LogLevel, message: string): string {
  return `${JSON.stringify({ level, message })}\n`;
}

export function resultLine(built: BuiltImage): string {
  return `${JSON.stringify({ result: { image: built.image, digest: built.digest ?? null, commit_sha: built.commitSha, env: built.env ?? {} } })}\n`;
}

export function parsePodLine(line: string): PodLine {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return { kind: 'log', level: 'INFO', message: line };
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const { level, message, result } = parsed as { level?: unknown; message?: unknown; result?: unknown };
    if (typeof level === 'string' && LEVELS.has(level as LogLevel) && typeof message === 'string') return { kind: 'log', level: level as LogLevel, message };
    const built = result as { image?: unknown; digest?: unknown; commit_sha?: unknown; env?: unknown } | undefined;
    if (typeof built === 'object' && built !== null && typeof built.image === 'string') {
      return {
        kind: 'result',
        result: {
          image: built.image,
          digest: typeof built.digest === 'string' ? built.digest : null,
          commitSha: typeof built.commit_sha === 'string' ? built.commit_sha : null,
          env: stringRecord(built.env),
        },
      };
    }
  }
  return { kind: 'log', level: 'INFO', message: line };
}

function stringRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** Replaces every credential in a line before it leaves the runner: a build may echo what it was given. */
export function redactor(secrets: (string | undefined | null)[]): (line: string) => string {
  const values = secrets.filter((s): s is string => typeof s === 'string' && s.length >= 4).sort((a, b) => b.length - a.length);
  return (line) => values.reduce((text, secret) => text.split(secret).join('[redacted]'), line);
}
