import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * Structured logs: JSON lines for log collectors, readable lines for a person at a terminal.
 * Request logs carry the request id (`reqId`). Header and body fields that can hold
 * credentials are redacted should anything ever log them, in either format.
 */
export function createLogger(level: string, destination?: pino.DestinationStream | LogFormat): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'berth' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', '*.client_secret', '*.secrets', '*.value', '*.key', '*.apiKey', '*.password'],
      censor: '[redacted]',
    },
  };
  if (typeof destination === 'object') return pino(options, destination);
  return pino(options, wantsPretty(destination ?? 'json') ? prettyStream() : undefined);
}

function wantsPretty(format: LogFormat): boolean {
  return format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
}

/** In-process rather than a transport thread: a start-up message is never lost to a thread that has not started. */
function prettyStream(): pino.DestinationStream {
  return pretty({
    destination: 1,
    sync: true,
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    singleLine: true,
  });
}
