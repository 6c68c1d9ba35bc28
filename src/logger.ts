import pino, { type Logger } from 'pino';

/**
 * Structured JSON logs. Request logs carry the request id (`reqId`). Header and body
 * fields that can hold credentials are redacted should anything ever log them.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'berth' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['req.headers.authorization', 'req.headers["x-api-key"]', '*.client_secret', '*.secrets', '*.value', '*.key', '*.apiKey', '*.password'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
