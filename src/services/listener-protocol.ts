import type {
  DesiredDeploymentView,
  DesiredStateView,
  HeartbeatInput,
  HeartbeatResultView,
  ReportsInput,
  ReportsResultView,
} from '../contract/listener-protocol.js';
import { LISTENER_PROTOCOL_VERSION } from '../contract/listener-protocol.js';
import { DEFAULT_DEPLOY_TIMEOUT_SECONDS } from '../domain/deployment-config.js';
import { fail, listenerNotFound } from '../domain/errors.js';
import { HEARTBEAT_INTERVAL_SECONDS, OFFLINE_AFTER_SECONDS } from '../domain/listener-status.js';
import { containerEnvironment } from '../domain/build-inputs.js';
import type { RevisionStatus } from '../domain/revision-status.js';
import { announce, announceListener, recordLog } from '../events/recorder.js';
import { deploymentServes, settleUnused } from '../lifecycle/outcomes.js';
import { moveRevision, type RevisionMove } from '../lifecycle/revisions.js';
import { decryptSecretSet } from '../security/secret-sets.js';
import { type Executor, nowIso } from '../store/database.js';
import {
  type DeploymentRecord,
  deploymentsOnListener,
  findDeploymentById,
  markRemoteReconciled,
  moveServingUrl,
  releaseFromListener,
} from '../store/repositories/deployments.js';
import { bumpGeneration, findListenerById, generationOf, generationsOf, type ListenerRecord, markSeen } from '../store/repositories/listeners.js';
import { resourcesOf } from '../store/repositories/resources.js';
import { provisionedVariables } from '../provisioning/variables.js';
import { configEnvOf, findRevisionById, type RevisionRecord, revisionsForListener } from '../store/repositories/revisions.js';
import { decryptConfigEnv } from '../security/config-env.js';
import { secretEntries } from '../store/repositories/secret-sets.js';
import { allFieldsRead } from './all-fields-read.js';
import type { ServiceDeps } from './index.js';
import { ListenerWaits } from './listener-waits.js';

/** The listener a request speaks for (its key names it). */
export interface ListenerCaller {
  listenerId: string;
  workspaceId: string;
}

type Outcome = 'applied' | 'unchanged' | 'fenced';
type RevisionReportInput = NonNullable<ReportsInput['revisions']>[number];

/** While state requests wait, their generations are re-read this often even without news (a missed wake-up costs at most this). */
const RECHECK_MS = 2_000;

/** Where a k8s listener runs the deployment: the namespace it was placed in, else the listener's first. */
function namespaceOf(deployment: DeploymentRecord, listener: ListenerRecord): string | null {
  return deployment.source_config.listener_config?.k8s_namespace ?? listener.compute_config.k8s_namespaces[0] ?? null;
}

/**
 * The listener protocol (docs/listener-protocol.md): what an agent should run, and what it
 * reports. Revisions move only through the lifecycle, fenced by the listener: a report about
 * a deployment no longer placed on it moves nothing.
 */
export function createListenerProtocolService({ db, bus, encryptor }: ServiceDeps) {
  const waits = new ListenerWaits(bus, (ids) => generationsOf(db, ids), RECHECK_MS);
  /** The listener's generation: one statement marks it seen and reads it (and finds it gone). */
  const seen = async (caller: ListenerCaller, version?: string): Promise<number> => {
    const generation = await markSeen(db, caller.listenerId, nowIso(), version);
    if (generation === undefined) throw listenerNotFound(caller.listenerId);
    return generation;
  };

  async function snapshot(caller: ListenerCaller, generation: number): Promise<DesiredStateView> {
    const listener = await findListenerById(db, caller.listenerId);
    if (!listener) throw listenerNotFound(caller.listenerId);
    const placed = await deploymentsOnListener(db, caller.listenerId);
    const live = placed.filter((d) => d.status !== 'AWAITING_DELETE');
    const revisions = await revisionsForListener(
      db,
      live.map((d) => d.id),
      live.flatMap((d) => (d.active_revision_id ? [d.active_revision_id] : [])),
    );
    const deployments: DesiredDeploymentView[] = [];
    for (const deployment of live) {
      const mine = revisions.filter((r) => r.deployment_id === deployment.id);
      // The newest handed over wins; else what serves now.
      const target =
        mine.filter((r) => r.status === 'AWAITING_DEPLOY' || r.status === 'DEPLOYING').at(-1) ??
        mine.find((r) => r.id === deployment.active_revision_id && r.status === 'DEPLOYED');
      const image = target && (target.image_ref ?? target.source_revision_config.image_uri ?? '');
      if (!target || !image) continue;
      deployments.push({
        deployment_id: deployment.id,
        deployment_name: deployment.name,
        revision_id: target.id,
        revision_status: target.status as DesiredDeploymentView['revision_status'],
        image_uri: image,
        resource_spec: target.resource_spec,
        secrets: await environmentOf(deployment, target),
        namespace: namespaceOf(deployment, listener),
        deploy_timeout_seconds: deployment.source_config.deploy_timeout_seconds || DEFAULT_DEPLOY_TIMEOUT_SECONDS,
      });
    }
    return {
      protocol_version: LISTENER_PROTOCOL_VERSION,
      listener_id: caller.listenerId,
      generation,
      deployments,
      deletions: placed
        .filter((d) => d.status === 'AWAITING_DELETE')
        .map((d) => ({ deployment_id: d.id, deployment_name: d.name, namespace: namespaceOf(d, listener) })),
    };
  }

  /** The revision's secrets, the provisioned databases and the platform's variables: everything its container gets. */
  async function environmentOf(deployment: DeploymentRecord, revision: RevisionRecord): Promise<{ name: string; value: string }[]> {
    const env = containerEnvironment({
      configEnv: decryptConfigEnv(encryptor, revision.id, await configEnvOf(db, revision.id)),
      secrets: revision.secret_set_id ? decryptSecretSet(encryptor, await secretEntries(db, [revision.secret_set_id])) : [],
      provisioned: provisionedVariables(encryptor, await resourcesOf(db, deployment.id)),
      deployment,
      revision,
    });
    return Object.entries(env).map(([name, value]) => ({ name, value }));
  }

  async function logLines(trx: Executor, revision: RevisionRecord, lines: RevisionReportInput['logs']): Promise<void> {
    for (const line of lines ?? []) {
      await recordLog(trx, { deploymentId: revision.deployment_id, revisionId: revision.id, logType: 'deploy', level: line.level, message: line.message });
    }
  }

  async function fenced(revision: RevisionRecord, caller: ListenerCaller, report: RevisionReportInput, why: string): Promise<Outcome> {
    await recordLog(db, {
      deploymentId: revision.deployment_id,
      revisionId: revision.id,
      logType: 'deploy',
      level: 'WARNING',
      message: `Listener ${caller.listenerId} reported ${report.status} for revision ${revision.seq}, ignored: ${why}.`,
    });
    announce(bus, revision.deployment_id);
    return 'fenced';
  }

  /** One revision report; at most a few rounds when another writer moves the revision meanwhile. */
  async function reportRevision(caller: ListenerCaller, report: RevisionReportInput): Promise<Outcome> {
    const { deployment_id, revision_id, status, url, message, logs, ...unread } = report;
    allFieldsRead(unread);
    const fence = { kind: 'listener' as const, listenerId: caller.listenerId };
    for (let round = 0; round < 5; round += 1) {
      const revision = await findRevisionById(db, revision_id.toLowerCase());
      if (!revision || revision.deployment_id !== deployment_id.toLowerCase()) return 'fenced';
      const deployment = await findDeploymentById(db, revision.deployment_id);
      if (!deployment || deployment.workspace_id !== caller.workspaceId) return 'fenced';
      if (deployment.listener_id !== caller.listenerId) return fenced(revision, caller, report, 'the deployment is not placed on this listener');
      if (deployment.status === 'AWAITING_DELETE') return fenced(revision, caller, report, 'the deployment is being deleted');

      const current = revision.status;
      if (current === 'DEPLOYED' && status === 'DEPLOYED' && url && url !== revision.url) return relocate(caller, revision, report, url);
      if (current === status || (current === 'DEPLOYED' && status === 'DEPLOYING')) return 'unchanged';
      if (current !== 'AWAITING_DEPLOY' && current !== 'DEPLOYING') {
        return fenced(revision, caller, report, `the revision is ${current} and no longer the one to run`);
      }
      const step: RevisionStatus = status === 'DEPLOYED' && current === 'AWAITING_DEPLOY' ? 'DEPLOYING' : status;
      const move: RevisionMove = { message: null, fence, alongside: (trx) => logLines(trx, revision, logs) };
      if (step === 'DEPLOYING') {
        move.message = `Listener ${caller.listenerId} is deploying the revision.`;
      } else if (step === 'DEPLOY_FAILED') {
        move.message = `Deploy failed on listener ${caller.listenerId}: ${message?.trim() || 'no reason given'}`;
        move.alongside = async (trx) => {
          await logLines(trx, revision, logs);
          await settleUnused({ db, bus }, deployment.id, { fence }, trx);
        };
      } else {
        move.message = url ? `Serving at ${url}.` : `Deployed by listener ${caller.listenerId}.`;
        move.set = { url: url ?? null };
        move.alongside = async (trx) => {
          await logLines(trx, revision, logs);
          await deploymentServes({ db, bus }, trx, deployment, { revisionId: revision.id, url: url || null, fence });
          await markRemoteReconciled(trx, deployment.id, revision.id);
        };
      }
      const result = await moveRevision({ db, bus }, revision, step, move);
      if (result.outcome === 'fenced') return fenced(revision, caller, report, 'the deployment is not placed on this listener');
      if (result.outcome === 'moved') continue;
      // The engine may have a revision queued behind this one.
      bus.publish({ topic: 'work', deploymentId: deployment.id });
      if (step === status) return 'applied';
      // DEPLOYED from AWAITING_DEPLOY: the second step, now from DEPLOYING (its logs are written).
      report = { ...report, logs: undefined };
      const second = await reportRevision(caller, report);
      return second === 'fenced' ? 'fenced' : 'applied';
    }
    return 'unchanged';
  }

  /** A DEPLOYED revision the listener now serves at another address: the new one is where users find it. */
  async function relocate(caller: ListenerCaller, revision: RevisionRecord, report: RevisionReportInput, url: string): Promise<Outcome> {
    const moved = await db.transaction().execute(async (trx) => {
      const changed = await moveServingUrl(trx, {
        deploymentId: revision.deployment_id,
        revisionId: revision.id,
        listenerId: caller.listenerId,
        url,
        previousUrl: revision.url,
        now: nowIso(),
      });
      if (!changed) return false;
      await logLines(trx, revision, report.logs);
      await recordLog(trx, {
        deploymentId: revision.deployment_id,
        revisionId: revision.id,
        logType: 'deploy',
        level: 'INFO',
        message: `Listener ${caller.listenerId} now serves the revision at ${url}${revision.url ? ` (was ${revision.url})` : ''}.`,
      });
      return true;
    });
    if (!moved) return fenced(revision, caller, report, 'the revision is not the one the deployment serves');
    announce(bus, revision.deployment_id);
    return 'applied';
  }

  async function reportDeletion(caller: ListenerCaller, deploymentId: string): Promise<Outcome> {
    const id = deploymentId.toLowerCase();
    const deployment = await findDeploymentById(db, id);
    // Gone already: a retried report.
    if (!deployment) return 'unchanged';
    if (deployment.workspace_id !== caller.workspaceId) return 'fenced';
    if (deployment.listener_id === null && deployment.status === 'AWAITING_DELETE' && deployment.source_config.listener_id === caller.listenerId) {
      return 'unchanged';
    }
    const released = await db.transaction().execute(async (trx) => {
      if (!(await releaseFromListener(trx, id, caller.listenerId))) return false;
      await bumpGeneration(trx, caller.listenerId);
      return true;
    });
    if (!released) return 'fenced';
    announceListener(bus, caller.listenerId);
    // The engine finishes the delete (provisioned databases, stored inputs, the row).
    bus.publish({ topic: 'work', deploymentId: id });
    return 'applied';
  }

  return {
    /**
     * The listener's desired state. With `since` at or beyond the current generation, waits
     * (up to `wait` seconds) for it to grow, holding no database connection meanwhile.
     */
    async state(caller: ListenerCaller, query: { since?: number; wait?: number }, signal: AbortSignal): Promise<DesiredStateView> {
      const { since, wait = 0, ...unread } = query;
      allFieldsRead(unread);
      const deadline = Date.now() + wait * 1000;
      // Listen before the first read, so a change committed in between is not missed.
      const watch = waits.watch(caller.listenerId, signal);
      try {
        // Seen at the start only: the agent's next poll follows at once, and a listener
        // turns OFFLINE only after more than the longest wait (domain/listener-status.ts).
        let generation = await seen(caller);
        for (;;) {
          // The generation first: the snapshot read after it holds at least every change it counts.
          const left = deadline - Date.now();
          if (since === undefined || generation > since || left <= 0 || signal.aborted) return await snapshot(caller, generation);
          await watch.next(left, since);
          const now = await generationOf(db, caller.listenerId);
          if (now === undefined) throw listenerNotFound(caller.listenerId);
          generation = now;
        }
      } finally {
        watch.close();
      }
    },

    async report(caller: ListenerCaller, input: ReportsInput): Promise<ReportsResultView> {
      const { revisions = [], deletions = [], ...unread } = input;
      allFieldsRead(unread);
      await seen(caller);
      const result: ReportsResultView = { revisions: [], deletions: [] };
      for (const report of revisions) result.revisions.push({ revision_id: report.revision_id.toLowerCase(), outcome: await reportRevision(caller, report) });
      for (const report of deletions) {
        const { deployment_id, ...rest } = report;
        allFieldsRead(rest);
        result.deletions.push({ deployment_id: deployment_id.toLowerCase(), outcome: await reportDeletion(caller, deployment_id) });
      }
      return result;
    },

    async heartbeat(caller: ListenerCaller, input: HeartbeatInput): Promise<HeartbeatResultView> {
      const { version, ...unread } = input;
      allFieldsRead(unread);
      await seen(caller, version);
      return { listener_id: caller.listenerId, heartbeat_interval_seconds: HEARTBEAT_INTERVAL_SECONDS, offline_after_seconds: OFFLINE_AFTER_SECONDS };
    },

    /** The protocol version header, when sent, must name a version this server speaks. */
    checkVersion(header: string | undefined): void {
      if (header === undefined || header.trim() === String(LISTENER_PROTOCOL_VERSION)) return;
      throw fail(
        'listener_protocol_unsupported',
        `Listener protocol version '${header.slice(0, 20)}' is not supported; this server speaks version ${LISTENER_PROTOCOL_VERSION}. Upgrade the listener or Berth.`,
      );
    },
  };
}
