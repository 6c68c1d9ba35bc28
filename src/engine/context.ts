import type { Logger } from 'pino';
import type { ProviderOptions } from '../codehost/index.js';
import type { Provisioners } from './databases.js';
import type { UploadStore } from '../sources/uploads.js';
import type { Registry } from '../registry/setup.js';
import type { EventBus } from '../events/bus.js';
import type { Encryptor } from '../security/encryption.js';
import type { Db, Executor } from '../store/database.js';
import type { SecretEntryRow } from '../store/repositories/secret-sets.js';
import type { DelayedWrites } from './effects.js';
import type { BuildDriver, LogLevel, RuntimeDriver, StepContext } from './drivers/types.js';

/**
 * The step context the engine gives its drivers. Its own runner build driver also relays
 * lines a runner sent: `logOnce` writes them in one transaction with `claim` (which moves
 * the relay's position), and only if `claim` answers true, so an engine that resumes the
 * build never writes a line twice.
 */
export interface EngineStepContext extends StepContext {
  logOnce(lines: readonly { level: LogLevel; message: string }[], claim: (trx: Executor) => Promise<boolean>): Promise<boolean>;
  /**
   * Runs `wait` (a build another machine does) with this work's engine slot lent to other
   * work meanwhile, and answers once the slot is taken back.
   */
  awayFromSlot<T>(wait: () => Promise<T>): Promise<T>;
}

/** Whether the step comes from the engine (the runner build driver runs under nothing else). */
export const isEngineStep = (step: StepContext): step is EngineStepContext => 'logOnce' in step;

export interface EngineDeps {
  db: Db;
  bus: EventBus;
  encryptor: Encryptor;
  runtime: RuntimeDriver;
  builder: BuildDriver;
  logger: Logger;
  /** How code-host integrations reach their repositories. */
  codehost: ProviderOptions;
  /** Per-deployment databases, when configured. */
  provisioners: Provisioners;
  /** Uploaded project archives (internal_source revisions are built from them). */
  uploads: UploadStore;
  /** Berth's image registry: the runtime pulls images pushed there with credentials minted for it. */
  registry: Registry | undefined;
}

export interface EngineSettings {
  /** Unique per process: `<host>/<pid>/<random>`. */
  workerId: string;
  leaseMs: number;
  /** Deployments worked on at once by this process. */
  concurrency: number;
  /** Safety-net sweep for expired leases and wake-ups another process could not send. */
  sweepMs: number;
  /** Defaults for steps whose deployment sets no timeout of its own. */
  buildTimeoutMs: number;
  deployTimeoutMs: number;
  /** BERTH_ENGINE_WORKSPACE_SLOTS: deployments of one workspace worked on at once, by all engine processes together. */
  workspaceSlots: number;
  /** BERTH_MAX_BUILD_TIMEOUT_SECONDS / BERTH_MAX_DEPLOY_TIMEOUT_SECONDS: the most a deployment's own timeouts get. */
  maxBuildTimeoutSeconds: number;
  maxDeployTimeoutSeconds: number;
  /** How long a step's log lines wait for the step's next write before they are written alone, so that followers see them live. */
  logFlushMs: number;
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

/** What the engine hands a worker: one leased deployment to work on. */
export interface WorkAssignment extends EngineDeps {
  settings: EngineSettings;
  deploymentId: string;
  /** Aborted with a StopSignal when the whole work must stop. */
  work: AbortController;
  /** Lends this work's engine slot while it waits on another machine; the function answered takes it back. */
  lendSlot?: () => () => Promise<void>;
}

/** What the worker last read of its deployment, so steps need not read it again. */
export interface LastRead {
  /** The deployment's listener (null: not placed, which never changes). */
  listenerId?: string | null;
  /** Stored secrets of the revisions in progress, by set. */
  secretEntries?: Map<string, SecretEntryRow[]>;
  /** Whether the deployment has provisioned databases. */
  hasDatabases?: boolean;
}

/** One leased deployment being worked on by this process. */
export interface WorkContext extends WorkAssignment {
  /** The step running now, so an interruption can stop it promptly (run-step.ts). */
  step?: { revisionId: string; controller: AbortController };
  lastRead: LastRead;
  /** Writes decided but not made yet (effects.ts). */
  writes: DelayedWrites;
}
