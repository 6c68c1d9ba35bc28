import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { DEFAULT_DEPLOY_TIMEOUT_SECONDS } from '../domain/deployment-config.js';
import { StopSignal, type EngineDeps, type EngineSettings } from './context.js';
import { setEngineSlots } from '../observability/metrics.js';
import { type ClaimCandidate, claimCandidates, leaseHoldersOn, releaseLeasesOf, takeFairLease } from '../store/repositories/leases.js';
import { defaultWorkspaceSlots } from '../domain/fair-share.js';
import { markWaitingForShare } from './fair-share.js';
import { failOverdueHandovers } from './listener-deadlines.js';
import { workOnDeployment } from './worker.js';
import { processAlive } from '../locks/process-alive.js';

export const DEFAULT_ENGINE_SETTINGS: Omit<EngineSettings, 'workerId' | 'workspaceSlots'> = {
  leaseMs: 15_000,
  concurrency: 4,
  sweepMs: 2_000,
  buildTimeoutMs: 15 * 60_000,
  deployTimeoutMs: DEFAULT_DEPLOY_TIMEOUT_SECONDS * 1000,
  maxBuildTimeoutSeconds: 3600,
  maxDeployTimeoutSeconds: 1800,
  logFlushMs: 200,
};

/**
 * How long a deployment claimed with nothing to do stays out of this engine's claims,
 * unless news of it arrives first. A safety net: the claim query already leaves out what
 * waits on others (claimCandidates), but a rule that one day disagrees with the queue
 * policy must cost a look every so often, not a loop that never ends.
 */
const PARK_MS = 30_000;
const PARKED_AT_MOST = 500;
/** How often standby containers past their time are looked for (a runtime command each time). */
const STANDBY_SWEEP_MS = 30_000;

/**
 * The claim query sorts every revision in progress (oldest first), so under a backlog it
 * cost more than the rest of a revision's reads together. One query names this many
 * candidates, tried one by one by the slots until used up or older than CANDIDATES_FOR_MS;
 * a candidate someone finished meanwhile costs only a look (the worker finds nothing to do).
 */
const CANDIDATES_PER_QUERY = 16;
const CANDIDATES_FOR_MS = 500;
const NEWS_EXPIRES_LIST_MS = 50;

export function newWorkerId(): string {
  return `${os.hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
}

/**
 * Carries revisions from CREATING to a final status. Runs inside the server or alone
 * (`berth engine`); any number of engines may share one database. New work arrives on
 * the bus and is claimed at once; a periodic sweep takes over expired leases (a crashed
 * process) and catches wake-ups that could not reach this process.
 */
export class Engine {
  readonly settings: EngineSettings;
  #slots = 0;
  #wanted = false;
  #stopped = true;
  #sweep: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  readonly #work = new Set<AbortController>();
  readonly #running = new Set<Promise<void>>();
  /** Deployments found idle, with when they may be claimed again. */
  readonly #parked = new Map<string, number>();
  /** Candidates of the last claim query not tried yet (see CANDIDATES_PER_QUERY). */
  #candidates: ClaimCandidate[] = [];
  #candidatesAt = 0;
  /**
   * Workspaces found holding their share since the candidates were listed: their candidates
   * stay listed but are passed over until a slot of this engine finishes one of their
   * deployments (or the list is made again), so that a workspace at its share costs no
   * query and no refused lease per free slot.
   */
  readonly #full = new Set<string>();
  /** Successful claims since start, for tests and metrics. */
  claims = 0;
  /**
   * Work whose build on a runner ended, waiting to take a slot back: served before any new
   * claim, so that a slot freed goes to the deploy of a build already done first. While this
   * list is not empty every slot is taken (see #offerFreeSlots).
   */
  readonly #returning: (() => void)[] = [];
  /** Work whose slot is lent now: it is not busy in a slot (the slots metric leaves it out). */
  #lent = 0;

  constructor(
    private readonly deps: EngineDeps,
    settings: Partial<EngineSettings> = {},
  ) {
    const concurrency = settings.concurrency ?? DEFAULT_ENGINE_SETTINGS.concurrency;
    this.settings = { ...DEFAULT_ENGINE_SETTINGS, workerId: newWorkerId(), workspaceSlots: defaultWorkspaceSlots(concurrency), ...settings };
  }

  async start(): Promise<void> {
    this.#stopped = false;
    setEngineSlots(0, this.settings.concurrency);
    await this.#releaseOrphanedLeases();
    this.#unsubscribe = this.deps.bus.subscribe((message) => {
      // News of a parked deployment (a new revision, a listener's report…) may be work.
      if (message.origin !== this.settings.workerId && this.#parked.delete(message.deploymentId)) this.wake();
      if (message.topic === 'work') {
        // New work may belong to a workspace that waited longer than every candidate listed:
        // the list expires soon after, not at once, so a burst of creates costs a claim query
        // per NEWS_EXPIRES_LIST_MS rather than one per create.
        this.#candidatesAt = Math.min(this.#candidatesAt, Date.now() - CANDIDATES_FOR_MS + NEWS_EXPIRES_LIST_MS);
        this.wake();
        this.#wakeWhenListExpires();
      }
    });
    this.#sweep = setInterval(() => {
      this.wake();
      this.#failOverdueHandovers();
      this.#markWaitingForShare();
      this.#removeExpiredStandbys();
    }, this.settings.sweepMs);
    this.#sweep.unref();
    this.#removeExpiredStandbys();
    this.wake();
  }

  #listExpiry: NodeJS.Timeout | undefined;

  /** A slot that found only full workspaces listed looks again once news has expired the list. */
  #wakeWhenListExpires(): void {
    if (this.#listExpiry) return;
    this.#listExpiry = setTimeout(() => {
      this.#listExpiry = undefined;
      this.wake();
    }, NEWS_EXPIRES_LIST_MS + 1);
    this.#listExpiry.unref();
  }

  readonly #onStop: (() => Promise<void>)[] = [];

  /** Work that lives and dies with the engine (the git poller). */
  onStop(stop: () => Promise<void>): void {
    this.#onStop.push(stop);
  }

  /** Stops claiming, pauses running steps (their revisions resume elsewhere) and releases leases. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.#onStop.map((stop) => stop()));
    this.#stopped = true;
    clearInterval(this.#sweep);
    clearTimeout(this.#listExpiry);
    this.#unsubscribe?.();
    for (const controller of this.#work) controller.abort(new StopSignal('shutdown'));
    await Promise.allSettled([...this.#running, this.#sweepingHandovers, this.#markingWaiting, this.#sweepingStandbys]);
  }

  wake(): void {
    if (this.#stopped) return;
    this.#wanted = true;
    if (this.#slots >= this.settings.concurrency) return;
    this.#slots += 1;
    const slot = this.#slot().finally(() => {
      this.#slots -= 1;
      this.#running.delete(slot);
      this.#offerFreeSlots();
    });
    this.#running.add(slot);
  }

  /**
   * Gives a slot back while its work waits for a build on a runner (another machine does the
   * work, so it should not bound how many runners this engine keeps busy); the function
   * answered takes a slot again, once one is free, before the work goes on.
   */
  #lendSlot(): () => Promise<void> {
    this.#slots -= 1;
    this.#lent += 1;
    this.#reportSlots();
    this.#offerFreeSlots();
    this.wake();
    let taken: Promise<void> | undefined;
    return () =>
      (taken ??= new Promise<void>((resolve) => {
        this.#returning.push(() => {
          this.#lent -= 1;
          this.#reportSlots();
          resolve();
        });
        this.#offerFreeSlots();
      }));
  }

  #reportSlots(): void {
    setEngineSlots(this.#work.size - this.#lent, this.settings.concurrency);
  }

  #offerFreeSlots(): void {
    while (this.#returning.length > 0 && this.#slots < this.settings.concurrency) {
      this.#slots += 1;
      (this.#returning.shift() as () => void)();
    }
  }

  async #slot(): Promise<void> {
    while (!this.#stopped) {
      this.#wanted = false;
      let candidate: ClaimCandidate | undefined;
      try {
        candidate = await this.#claim(new Date());
      } catch (error) {
        this.deps.logger.error({ err: error }, 'engine could not claim work');
        return;
      }
      if (!candidate) {
        // A wake-up that came while we looked may be for work our query missed: look again.
        if (this.#wanted) continue;
        // Nothing this engine may take: what is left may wait for its workspace's share.
        this.#markWaitingForShare();
        return;
      }
      const claimed = candidate.id;
      this.claims += 1;
      const work = new AbortController();
      this.#work.add(work);
      this.#reportSlots();
      try {
        const outcome = await workOnDeployment({ ...this.deps, settings: this.settings, deploymentId: claimed, work, lendSlot: () => this.#lendSlot() });
        if (outcome === 'idle') this.#park(claimed);
      } catch (error) {
        this.deps.logger.error({ err: error, deploymentId: claimed }, 'engine work failed');
      } finally {
        this.#work.delete(work);
        this.#reportSlots();
        this.#full.delete(candidate.workspaceId);
      }
      // On SQLite every query resolves as a microtask: without this, a slot that keeps
      // finding work would never let the event loop serve requests or signals.
      await yieldToEventLoop();
      // Work back from a runner build goes first: this slot ends, and its end hands it over.
      if (this.#returning.length > 0) return;
    }
  }

  /**
   * Leases a deployment with work: the next candidate of a workspace with room in its share,
   * or a new query's once they are used up or old.
   */
  async #claim(now: Date): Promise<ClaimCandidate | undefined> {
    const at = now.toISOString();
    const expiresAt = new Date(now.getTime() + this.settings.leaseMs).toISOString();
    let queried = false;
    for (;;) {
      if (now.getTime() - this.#candidatesAt > CANDIDATES_FOR_MS) this.#candidates = [];
      const next = this.#candidates.findIndex((c) => !this.#full.has(c.workspaceId));
      if (next < 0) {
        // A fresh list tried to its end, or one that names only workspaces at their share
        // (news expires it soon): nothing to claim now.
        if (queried || this.#candidates.length > 0) return undefined;
        queried = true;
        this.#candidates = await claimCandidates(this.deps.db, at, this.#stillParked(now.getTime()), CANDIDATES_PER_QUERY, this.settings.workspaceSlots);
        this.#candidatesAt = now.getTime();
        // The query leaves out workspaces at their share: what it lists has room, as far as it knew.
        this.#full.clear();
        continue;
      }
      const [candidate] = this.#candidates.splice(next, 1) as [ClaimCandidate];
      if (this.#parked.has(candidate.id)) continue;
      const lease = await takeFairLease(this.deps.db, candidate, this.settings.workerId, at, expiresAt, this.settings.workspaceSlots);
      if (lease === 'leased') return candidate;
      // Its workspace filled its share since the list was made (the candidate stays listed).
      if (lease === 'full') {
        this.#full.add(candidate.workspaceId);
        this.#candidates.unshift(candidate);
      }
    }
  }

  #markingWaiting: Promise<void> | undefined;

  /** Revisions left waiting for their workspace's share say so (engine/fair-share.ts). */
  #markWaitingForShare(): void {
    if (this.#markingWaiting || this.#stopped) return;
    this.#markingWaiting = markWaitingForShare(this.deps, this.settings)
      .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'could not mark revisions waiting for their workspace share'))
      .finally(() => {
        this.#markingWaiting = undefined;
      });
  }

  #sweepingHandovers: Promise<void> | undefined;
  #sweepingStandbys: Promise<void> | undefined;
  #standbysSweptAt = 0;

  /** Standby containers past their time go, those a stopped Berth left too (at start). */
  #removeExpiredStandbys(): void {
    const sweep = this.deps.runtime.sweepStandbys?.bind(this.deps.runtime);
    if (!sweep || this.#sweepingStandbys || this.#stopped || Date.now() - this.#standbysSweptAt < STANDBY_SWEEP_MS) return;
    this.#standbysSweptAt = Date.now();
    this.#sweepingStandbys = sweep()
      .then((removed) => {
        if (removed.length > 0) this.deps.logger.info({ containers: removed }, 'removed standby containers whose time ended');
      })
      .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'could not remove expired standby containers'))
      .finally(() => {
        this.#sweepingStandbys = undefined;
      });
  }

  /** Revisions a listener stayed silent on past the deploy timeout fail (engine/listener-deadlines.ts). */
  #failOverdueHandovers(): void {
    if (this.#sweepingHandovers || this.#stopped) return;
    this.#sweepingHandovers = failOverdueHandovers(this.deps, this.settings)
      .then(() => {})
      .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'could not fail overdue listener handovers'))
      .finally(() => {
        this.#sweepingHandovers = undefined;
      });
  }

  #park(deploymentId: string): void {
    this.deps.logger.warn({ deploymentId }, 'engine claimed a deployment with nothing to do; leaving it alone for a while');
    this.#parked.set(deploymentId, Date.now() + PARK_MS);
    if (this.#parked.size > PARKED_AT_MOST) this.#parked.delete(this.#parked.keys().next().value as string);
  }

  #stillParked(now: number): string[] {
    for (const [id, until] of this.#parked) if (until <= now) this.#parked.delete(id);
    return [...this.#parked.keys()];
  }

  /**
   * Leases held by a process of this host that no longer exists (killed, crashed) are
   * released at once, so a restart continues its revisions without waiting for expiry.
   */
  async #releaseOrphanedLeases(): Promise<void> {
    for (const owner of await leaseHoldersOn(this.deps.db, os.hostname())) {
      const pid = Number(owner.split('/')[1]);
      if (!Number.isInteger(pid) || processAlive(pid)) continue;
      await releaseLeasesOf(this.deps.db, owner);
      this.deps.logger.info({ worker: owner }, 'released the leases of a Berth process that is gone');
    }
  }
}
