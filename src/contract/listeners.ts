import { type Static, Type } from 'typebox';
import { DateTime, Nullable, OptionalNullable, PaginationQuery, StringEnum, Uuid } from './common.js';

/** Kubernetes namespace names are DNS-1123 labels. */
const K8sNamespace = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  description: 'A Kubernetes namespace name (DNS-1123 label).',
});

const ComputeType = Type.Union([Type.Literal('k8s'), Type.Literal('docker'), Type.Literal('podman')], {
  description:
    'Compute type of the listener: `k8s` (a Kubernetes cluster), or `docker`/`podman` (a container host running `berth listener`; beyond the public API). Cannot be changed after creation.',
});

const ComputeId = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'User-assigned id of the compute infrastructure, unique in the workspace (for `k8s`, the cluster name). Cannot be changed after creation.',
});

const Version = Type.String({ maxLength: 255, description: 'Version of the listener.' });

/** Request form: every field nullable. Unknown fields are ignored, as clients send extras. */
const ComputeConfigInput = Type.Object(
  {
    k8s_namespaces: OptionalNullable(
      Type.Array(K8sNamespace, {
        maxItems: 1000,
        description: 'Namespaces the listener deploys to; duplicates are removed, keeping the first occurrence.',
      }),
    ),
  },
  { title: 'ComputeConfigInput', description: 'Fields specific to `compute_type`. For `k8s`: `k8s_namespaces`.' },
);

export const Listener = Type.Object(
  {
    id: Uuid({ description: 'System-assigned id. Read-only.' }),
    compute_type: ComputeType,
    compute_id: Type.String(),
    compute_config: Type.Object({ k8s_namespaces: Type.Array(Type.String()) }),
    version: Nullable(Type.String()),
    created_at: DateTime('Read-only.'),
    updated_at: DateTime('Read-only.'),
    last_seen_at: Nullable(DateTime("When the listener's agent last called Berth (listener protocol). Read-only.")),
    status: StringEnum(['ONLINE', 'OFFLINE'] as const, {
      description: '`ONLINE` when the agent was heard from within the offline threshold (see docs/listener-protocol.md). Read-only.',
    }),
  },
  { title: 'Listener', description: 'Compute infrastructure on which deployments run: a Kubernetes cluster, or a container host running `berth listener`.' },
);

/** The answer to creating a listener: the listener and, this once, its key. */
export const CreatedListener = Type.Object(
  {
    ...Listener.properties,
    listener_key: Type.String({
      description: "The listener's key for the listener protocol (docs/listener-protocol.md), shown this once; only its digest is stored.",
    }),
  },
  { title: 'CreatedListener' },
);

export const ListenerCreateBody = Type.Object(
  {
    compute_type: ComputeType,
    compute_id: ComputeId,
    compute_config: ComputeConfigInput,
    version: OptionalNullable(Version),
  },
  { title: 'ListenerCreate' },
);

export const ListenerPatchBody = Type.Object(
  {
    version: OptionalNullable(Version),
    compute_config: OptionalNullable(ComputeConfigInput),
    compute_type: OptionalNullable(Type.String({ description: 'Immutable: accepted only when equal to the current value.' })),
    compute_id: OptionalNullable(Type.String({ description: 'Immutable: accepted only when equal to the current value.' })),
  },
  { title: 'ListenerUpdate', description: 'Absent or null fields are left as they are.' },
);

export const ListenerParams = Type.Object({ listener_id: Uuid({ description: 'Id of the listener.' }) });

export const ListenerListQuery = Type.Object(PaginationQuery);

export type ListenerView = Static<typeof Listener>;
export type CreatedListenerView = Static<typeof CreatedListener>;
export type CreateListenerInput = Static<typeof ListenerCreateBody>;
export type PatchListenerInput = Static<typeof ListenerPatchBody>;
