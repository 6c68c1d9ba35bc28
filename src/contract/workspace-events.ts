import { type Static, Type } from 'typebox';
import { Nullable, StringEnum, Uuid } from './common.js';
import { LogEventData, PushIgnoredEventData, StatusEventData } from './logs.js';

/** The event names of the deployment event stream, which the workspace's stream shares. */
export const EVENT_NAMES = ['status', 'log', 'push_ignored_pinned'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

const DeploymentId = { deployment_id: Uuid({ description: 'The deployment the event belongs to.' }) };

/** A deployment event's `data`, with the deployment it belongs to: the workspace's events mix deployments. */
export const WorkspaceStatusEventData = Type.Object({ ...DeploymentId, ...StatusEventData.properties }, { title: 'WorkspaceStatusEvent' });
export const WorkspaceLogEventData = Type.Object({ ...DeploymentId, ...LogEventData.properties }, { title: 'WorkspaceLogEvent' });
export const WorkspacePushIgnoredEventData = Type.Object({ ...DeploymentId, ...PushIgnoredEventData.properties }, { title: 'WorkspacePushIgnoredPinnedEvent' });

const EventId = Type.Integer({ description: 'Increasing with time; the SSE `id:` of the same event in the stream.' });

export const WorkspaceEvent = Type.Union(
  [
    Type.Object({ id: EventId, event: Type.Literal('status'), data: WorkspaceStatusEventData }),
    Type.Object({ id: EventId, event: Type.Literal('log'), data: WorkspaceLogEventData }),
    Type.Object({ id: EventId, event: Type.Literal('push_ignored_pinned'), data: WorkspacePushIgnoredEventData }),
  ],
  { title: 'WorkspaceEvent' },
);

/** Filters both the page and the stream take. */
const Filters = {
  deployment_id: Type.Optional(Uuid({ description: "Only this deployment's events." })),
  event: Type.Optional(StringEnum(EVENT_NAMES, { description: 'Only events of this name.' })),
};

const Cursor = Type.String({ pattern: '^[0-9]{1,15}$', description: 'An event id: the page starts after it (`asc`) or before it (`desc`).' });

export const WorkspaceEventQuery = Type.Object({
  ...Filters,
  order: StringEnum(['asc', 'desc'] as const, { default: 'desc', description: '`desc`: newest first.' }),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Maximum number of events.' }),
  cursor: Type.Optional(Cursor),
});

export const WorkspaceEventPage = Type.Object(
  {
    resources: Type.Array(WorkspaceEvent),
    next_cursor: Nullable(Type.String({ description: 'Send as `cursor` for the next page; null when this page was the last.' })),
  },
  { title: 'WorkspaceEventPage' },
);

export const WorkspaceEventStreamQuery = Type.Object({
  ...Filters,
  last_event_id: Type.Optional(Type.String({ description: 'Same as the Last-Event-ID header.' })),
});

export type WorkspaceEventView = Static<typeof WorkspaceEvent>;
export type WorkspaceEventQueryInput = Static<typeof WorkspaceEventQuery>;
export type WorkspaceEventPageView = Static<typeof WorkspaceEventPage>;
