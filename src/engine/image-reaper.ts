import type { Logger } from 'pino';
import type { EventBus } from '../events/bus.js';
import { removeRegistryImage } from '../registry/remove-image.js';
import type { Registry } from '../registry/setup.js';
import type { Db } from '../store/database.js';
import {
  claimImageRemoval,
  dueImageRemovals,
  finishImageRemoval,
  type ImageRemovalRecord,
  isImageInUse,
  postponeImageRemoval,
} from '../store/repositories/image-removals.js';
import type { BuildDriver, RuntimeDriver } from './drivers/types.js';

export interface ImageReaperDeps {
  db: Db;
  bus: EventBus;
  builder: BuildDriver;
  runtime: RuntimeDriver;
  registry: Registry | undefined;
  logger: Logger;
}

const SWEEP_MS = 60_000;
/** Wake-ups closer together than this share one pass. */
const DEBOUNCE_MS = 1_000;
const BATCH = 20;
/** How long a removal stays with the process that took it; one that dies holding it leaves it to others then. */
const CLAIM_MS = 10 * 60_000;
/** An image still named by a kept revision is looked at again after this (that revision may go meanwhile). */
const IN_USE_RECHECK_MS = 10 * 60_000;
const FIRST_RETRY_MS = 30_000;
const LAST_RETRY_MS = 60 * 60_000;

/**
 * Works off the queue of built images whose revisions are gone (store/repositories/
 * image-removals.ts, written in the transaction that removed them): each is removed from the
 * builder's stores, the runtime's store and Berth's registry, where its name still names what
 * was built. A removal that fails is logged and tried again later, ever less often; the
 * delete or the PATCH that queued it has long succeeded. Runs beside the engine, at start (so
 * a restart resumes what was queued), when the engine's work changes and once a minute.
 */
export function startImageReaper(deps: ImageReaperDeps): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let debounce: NodeJS.Timeout | undefined;

  const pass = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = reap(deps, () => stopped)
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'removing built images failed; will retry'))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          pass();
        }
      });
  };
  const soon = () => {
    debounce ??= setTimeout(() => {
      debounce = undefined;
      pass();
    }, DEBOUNCE_MS);
  };
  const unsubscribe = deps.bus.subscribe((message) => {
    if (message.topic === 'work' || message.topic === 'deployment') soon();
  });
  const timer = setInterval(pass, SWEEP_MS);
  timer.unref();
  pass();
  return {
    async stop() {
      stopped = true;
      unsubscribe();
      clearInterval(timer);
      clearTimeout(debounce);
      await running;
    },
  };
}

async function reap(deps: ImageReaperDeps, stopped: () => boolean): Promise<void> {
  for (;;) {
    const due = await dueImageRemovals(deps.db, new Date().toISOString(), BATCH);
    for (const removal of due) {
      if (stopped()) return;
      await reapOne(deps, removal);
    }
    if (due.length < BATCH) return;
  }
}

async function reapOne(deps: ImageReaperDeps, removal: ImageRemovalRecord): Promise<void> {
  const { db, logger } = deps;
  if (!(await claimImageRemoval(db, removal, later(CLAIM_MS)))) return;
  const fields = { image: removal.image_ref, deploymentId: removal.deployment_id };
  if (await isImageInUse(db, removal.workspace_id, removal.image_ref)) {
    await postponeImageRemoval(db, removal.image_ref, later(IN_USE_RECHECK_MS), null);
    return;
  }
  try {
    const outcomes = await forget(deps, removal);
    await finishImageRemoval(db, removal.image_ref);
    logger.info({ ...fields, ...outcomes }, 'removed a built image whose revision is gone');
  } catch (error) {
    const delay = Math.min(FIRST_RETRY_MS * 2 ** removal.attempts, LAST_RETRY_MS);
    const message = error instanceof Error ? error.message : String(error);
    await postponeImageRemoval(db, removal.image_ref, later(delay), message);
    logger.warn({ ...fields, attempts: removal.attempts + 1, retryInSeconds: delay / 1000, err: error }, 'removing a built image failed; will retry');
  }
}

/** Removes the image everywhere Berth put it; what each place did, for the log. */
async function forget(deps: ImageReaperDeps, removal: ImageRemovalRecord): Promise<Record<string, string>> {
  const image = { workspaceId: removal.workspace_id, deploymentId: removal.deployment_id, image: removal.image_ref, id: removal.image_id };
  if (deps.builder.forgetImage) await deps.builder.forgetImage(image);
  if (deps.runtime.forgetImage && (await deps.runtime.unavailableReason()) === null) await deps.runtime.forgetImage(image);
  if (!deps.registry || removal.image_digest === null) return {};
  return { registry: await removeRegistryImage(deps.registry, removal.image_ref, removal.image_digest) };
}

function later(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}
