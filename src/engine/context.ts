import type { Logger } from 'pino';
import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import type { Db } from '../store/database.js';
import type { BuildDriver, RuntimeDriver } from './drivers/types.js';

export interface EngineDeps {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  runtime: RuntimeDriver;
  builder: BuildDriver;
  logger: Logger;
}

export interface EngineSettings {
  /** Unique per process: `<host>/<pid>/<random>`. */
  workerId: string;
  leaseMs: number;
  /** Deployments worked on at once by this process. */
  concurrency: number;
  /** Safety-net sweep for expired leases and wake-ups another process could not send. */
  sweepMs: number;
  buildTimeoutMs: number;
  deployTimeoutMs: number;
}

/** Why work stopped before its end. Only `timeout` fails the revision; the others leave it to be resumed or ended elsewhere. */
export type StopReason = 'shutdown' | 'lease-lost' | 'interrupted' | 'deleting' | 'timeout';

export class StopSignal extends Error {
  constructor(readonly reason: StopReason) {
    super(`work stopped: ${reason}`);
  }
}

export function stopReasonOf(signal: AbortSignal): StopReason | undefined {
  return signal.aborted && signal.reason instanceof StopSignal ? signal.reason.reason : undefined;
}

/** One leased deployment being worked on by this process. */
export interface WorkContext extends EngineDeps {
  settings: EngineSettings;
  deploymentId: string;
  /** Aborted with a StopSignal when the whole work must stop. */
  work: AbortController;
  /** The step running now, so an interruption can stop it promptly. */
  step?: { revisionId: string; controller: AbortController };
}
