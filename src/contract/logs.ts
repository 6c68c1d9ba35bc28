import { type Static, Type } from 'typebox';
import { LOG_LEVELS } from '../domain/log-levels.js';
import { Nullable, OptionalNullable, StringEnum } from './common.js';

// Clients send levels in upper case; lower case costs nothing to accept.
const Level = StringEnum([...LOG_LEVELS, ...LOG_LEVELS.map((l) => l.toLowerCase())], {
  description: 'Keep lines at this level or more severe: DEBUG < INFO < WARNING < ERROR < CRITICAL.',
});
const Limit = Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Maximum number of lines.' });
const Cursor = 'Opaque cursor: the `next_offset` of the previous answer.';
const Time = (what: string) => Type.String({ description: `ISO 8601 date-time; ${what} (inclusive). Without a zone: UTC.` });
const Order = (fallback: 'asc' | 'desc') => StringEnum(['asc', 'desc'] as const, { default: fallback });
const Text = 'Case-insensitive text the message must contain.';

export const LOG_TYPES = ['build', 'deploy'] as const;

export const LogLine = Type.Object(
  {
    id: Type.String({ description: 'Unique, increasing with time.' }),
    timestamp: Type.Number({ description: 'Epoch milliseconds.' }),
    level: Type.String(),
    message: Type.String(),
    revision_id: Nullable(Type.String()),
  },
  { title: 'LogLine' },
);

export const LogPage = Type.Object(
  {
    logs: Type.Array(LogLine),
    next_offset: Nullable(Type.String({ description: 'Send as `offset` for the next page; null when this page was the last.' })),
  },
  { title: 'LogPage' },
);

/** `GET …/revisions/{id}/logs`: the filters in the query string. */
export const LogQuery = Type.Object({
  type: StringEnum(LOG_TYPES),
  order: Order('asc'),
  limit: Limit,
  offset: Type.Optional(Type.String({ description: Cursor })),
  start_time: Type.Optional(Time('lines at or after it')),
  end_time: Type.Optional(Time('lines at or before it')),
  query: Type.Optional(Type.String({ description: Text })),
  level: Type.Optional(Level),
  run_id: Type.Optional(Type.String({ description: 'Accepted for compatibility; ignored.' })),
});

/** The `POST /v1/projects/…_logs` forms: the same filters in the body, where clients send explicit nulls. */
export const LogQueryBody = Type.Object(
  {
    limit: Limit,
    order: Order('desc'),
    offset: OptionalNullable(Type.String({ description: Cursor })),
    level: OptionalNullable(Level),
    query: OptionalNullable(Type.String({ description: Text })),
    start_time: OptionalNullable(Time('lines at or after it')),
    end_time: OptionalNullable(Time('lines at or before it')),
  },
  { title: 'LogQuery' },
);

export const TimelineEntry = Type.Object(
  { status: Type.String(), message: Nullable(Type.String()), at: Type.String({ format: 'date-time' }) },
  { title: 'TimelineEntry' },
);

export const Timeline = Type.Object({ resources: Type.Array(TimelineEntry) }, { title: 'Timeline' });

export const EventStreamQuery = Type.Object({ last_event_id: Type.Optional(Type.String({ description: 'Same as the Last-Event-ID header.' })) });

/** `event: status` of GET /v2/deployments/{id}/events. */
export const StatusEventData = Type.Object(
  { revision_id: Nullable(Type.String()), status: Type.String(), message: Nullable(Type.String()), at: Type.String({ format: 'date-time' }) },
  { title: 'StatusEvent' },
);

/** `event: log` of GET /v2/deployments/{id}/events. */
export const LogEventData = Type.Object(
  {
    revision_id: Nullable(Type.String()),
    type: Nullable(Type.String()),
    level: Type.String(),
    message: Type.String(),
    timestamp: Type.Number({ description: 'Epoch milliseconds.' }),
  },
  { title: 'LogEvent' },
);

/** `event: push_ignored_pinned` of GET /v2/deployments/{id}/events: a push recorded while the deployment was pinned. */
export const PushIgnoredEventData = Type.Object(
  {
    revision_id: Nullable(Type.String({ description: 'The revision the deployment is pinned to.' })),
    commit: Type.String({ description: 'The commit the push named.' }),
    message: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { title: 'PushIgnoredPinnedEvent' },
);

export type LogLineView = Static<typeof LogLine>;
export type LogPageView = Static<typeof LogPage>;
export type TimelineEntryView = Static<typeof TimelineEntry>;
/** One event of the deployment event stream, with its id (the SSE `id:`, for Last-Event-ID). */
export type DeploymentEvent =
  | { id: number; event: 'status'; data: Static<typeof StatusEventData> }
  | { id: number; event: 'log'; data: Static<typeof LogEventData> }
  | { id: number; event: 'push_ignored_pinned'; data: Static<typeof PushIgnoredEventData> };
