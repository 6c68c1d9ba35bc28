import { DriverError, type LogLevel, type StepContext } from '../driver.js';

export function throwIfAborted(signal: AbortSignal, step: string): void {
  if (!signal.aborted) return;
  const reason = signal.reason instanceof Error ? signal.reason.message : signal.reason ? String(signal.reason) : 'no reason given';
  throw new DriverError(`Stopped while ${step}: the step was cancelled (${reason}).`);
}

export function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

// The agent (listener/) reports failures the same way without reaching into the engine.
export { errorMessage } from '../../domain/error-message.js';

export async function safeLog(context: StepContext, level: LogLevel, message: string): Promise<void> {
  try {
    await context.log(level, message);
  } catch {
    // The failure being reported matters more than one lost log line.
  }
}
