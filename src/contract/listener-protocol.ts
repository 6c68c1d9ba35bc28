/**
 * The listener protocol, version 1: how an agent that runs next to the user's compute
 * learns what Berth wants running there and tells Berth what happened. The agent always
 * calls Berth (never the other way round), authenticated with a listener key that reaches
 * these routes and nothing else. docs/listener-protocol.md explains the rules.
 */
import { type Static, Type } from 'typebox';
import { DateTime, Nullable, OptionalNullable, StringEnum, Uuid } from './common.js';
import { ResourceSpec } from './deployments.js';

export const LISTENER_PROTOCOL_VERSION = 1;
/** Sent by the agent on every call; another value answers 400 `listener_protocol_unsupported`. */
export const LISTENER_PROTOCOL_HEADER = 'x-berth-listener-protocol';
export const LISTENER_PROTOCOL_PREFIX = '/v1/listener-protocol';

/** The longest a state request may wait for a change. */
export const MAX_STATE_WAIT_SECONDS = 60;

export const DesiredStateQuery = Type.Object({
  since: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'The `generation` of the last state the agent received. The answer waits (up to `wait`) until the generation is greater.',
    }),
  ),
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_STATE_WAIT_SECONDS, default: 0, description: 'Seconds to wait for a change (long poll).' })),
});

export const DesiredSecret = Type.Object({ name: Type.String(), value: Type.String() }, { title: 'DesiredSecret' });

/** What should run for one deployment placed on the listener. */
export const DesiredDeployment = Type.Object(
  {
    deployment_id: Uuid(),
    deployment_name: Type.String(),
    revision_id: Uuid({ description: 'The revision that should run.' }),
    revision_status: StringEnum(['AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'] as const, {
      description: '`AWAITING_DEPLOY`/`DEPLOYING`: the agent should roll it out and report. `DEPLOYED`: it runs; keep it running.',
    }),
    image_uri: Type.String(),
    resource_spec: Nullable(ResourceSpec),
    /** Decrypted for the agent only; never logged by either side. */
    secrets: Type.Array(DesiredSecret),
    namespace: Nullable(Type.String({ description: 'Kubernetes namespace to deploy into (k8s listeners).' })),
    deploy_timeout_seconds: Type.Integer({ description: 'After this long without DEPLOYED, Berth fails the revision.' }),
  },
  { title: 'DesiredDeployment' },
);

/** A deployment whose delete was requested: remove everything it runs, then report. */
export const DesiredDeletion = Type.Object(
  {
    deployment_id: Uuid(),
    deployment_name: Type.String(),
    namespace: OptionalNullable(Type.String({ description: 'Kubernetes namespace it ran in (k8s listeners); absent from servers before 0.2.' })),
  },
  { title: 'DesiredDeletion' },
);

export const DesiredState = Type.Object(
  {
    protocol_version: Type.Literal(LISTENER_PROTOCOL_VERSION),
    listener_id: Uuid(),
    generation: Type.Integer({ minimum: 0, description: 'Grows whenever anything in this state changes; send it back as `since`.' }),
    deployments: Type.Array(DesiredDeployment),
    deletions: Type.Array(DesiredDeletion),
  },
  { title: 'DesiredState', description: 'Everything the listener should run now: a full snapshot, never a diff.' },
);

export const ReportedLogLine = Type.Object(
  {
    level: StringEnum(['DEBUG', 'INFO', 'WARNING', 'ERROR'] as const),
    message: Type.String({ maxLength: 4096 }),
    timestamp: OptionalNullable(DateTime()),
  },
  { title: 'ReportedLogLine' },
);

export const RevisionReport = Type.Object(
  {
    deployment_id: Uuid(),
    revision_id: Uuid(),
    status: StringEnum(['DEPLOYING', 'DEPLOYED', 'DEPLOY_FAILED'] as const),
    url: OptionalNullable(Type.String({ maxLength: 2048, description: 'Where the revision serves (with DEPLOYED).' })),
    message: OptionalNullable(Type.String({ maxLength: 4096, description: 'Why it failed, for a person (with DEPLOY_FAILED).' })),
    logs: Type.Optional(Type.Array(ReportedLogLine, { maxItems: 500, description: 'Deploy log lines, added to the revision once.' })),
  },
  { title: 'RevisionReport' },
);

export const DeletionReport = Type.Object({ deployment_id: Uuid() }, { title: 'DeletionReport', description: 'Everything of the deployment is gone.' });

export const ReportsBody = Type.Object(
  {
    revisions: Type.Optional(Type.Array(RevisionReport, { maxItems: 100 })),
    deletions: Type.Optional(Type.Array(DeletionReport, { maxItems: 100 })),
  },
  { title: 'ListenerReports' },
);

/**
 * `applied`: the report moved the revision or finished the delete. `unchanged`: it said what
 * Berth already knew (a retried report). `fenced`: it is about a revision that is no longer
 * the target, or a deployment not placed on this listener; recorded in the log, nothing moved.
 */
const Outcome = StringEnum(['applied', 'unchanged', 'fenced'] as const);

export const ReportsResult = Type.Object(
  {
    revisions: Type.Array(Type.Object({ revision_id: Uuid(), outcome: Outcome })),
    deletions: Type.Array(Type.Object({ deployment_id: Uuid(), outcome: Outcome })),
  },
  { title: 'ListenerReportsResult' },
);

export const HeartbeatBody = Type.Object(
  { version: Type.String({ minLength: 1, maxLength: 255, description: "The agent's version." }) },
  { title: 'ListenerHeartbeat' },
);

export const HeartbeatResult = Type.Object(
  {
    listener_id: Uuid(),
    heartbeat_interval_seconds: Type.Integer({
      description: 'How long the agent may go without any call reaching Berth before it sends a heartbeat (every call counts as one).',
    }),
    offline_after_seconds: Type.Integer({ description: 'Silent this long, the listener shows OFFLINE.' }),
  },
  { title: 'ListenerHeartbeatResult' },
);

export type DesiredStateView = Static<typeof DesiredState>;
export type DesiredDeploymentView = Static<typeof DesiredDeployment>;
export type ReportsInput = Static<typeof ReportsBody>;
export type ReportedLogLevel = Static<typeof ReportedLogLine>['level'];
export type ReportsResultView = Static<typeof ReportsResult>;
export type HeartbeatInput = Static<typeof HeartbeatBody>;
export type HeartbeatResultView = Static<typeof HeartbeatResult>;
