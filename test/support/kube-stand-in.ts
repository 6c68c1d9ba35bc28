import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { fieldAt, matches, parseSelector, SelectorError } from './kube-selectors.js';

/**
 * A local stand-in for the Kubernetes API server, implementing exactly the calls Berth's
 * applier makes, for the kinds it uses: discovery, server-side apply (PATCH with
 * application/apply-patch+yaml, fieldManager and force), GET, LIST with label and field
 * selectors, DELETE with propagation through owner references. No scheduler or
 * controllers run: tests set statuses and add pods and events to play them.
 *
 * Where it is simpler than a real API server, it says so:
 * - one field manager owns a whole object: apply replaces what was applied before (real
 *   server-side apply merges with fields other managers own) and keeps what the server
 *   set (uid, timestamps, status, a Service's clusterIP, a Deployment's replicas when the
 *   applied object leaves them to an autoscaler); applying as another manager without
 *   force is a 409 conflict, as in a cluster;
 * - garbage collection runs when a test calls collectGarbage() (in a cluster it runs soon
 *   after a delete, in the background): it deletes every object whose owners are all
 *   gone (or never existed), until none is left;
 * - pods are owned directly by their Deployment or StatefulSet (no ReplicaSets), or by
 *   their Job (labelled job-name, as the Job controller does);
 * - a pod's log (GET pods/{name}/log, with follow, timestamps and sinceTime at second
 *   precision) holds what a test wrote with writeLog(); a follow stays open until endLog()
 *   or dropLogStreams() (a connection the network lost);
 * - the immutable parts of Deployments (selector) and StatefulSets (all but replicas,
 *   template, update strategy, claim retention, minReadySeconds, ordinals) are refused
 *   with 422 as a cluster refuses them.
 */

export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [field: string]: unknown;
};

interface KindInfo {
  apiVersion: string;
  kind: string;
  plural: string;
  /** Objects whose spec changes bump metadata.generation. */
  generation: boolean;
}

const KINDS: KindInfo[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', generation: false },
  { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', generation: false },
  { apiVersion: 'v1', kind: 'Service', plural: 'services', generation: false },
  { apiVersion: 'v1', kind: 'Pod', plural: 'pods', generation: false },
  { apiVersion: 'v1', kind: 'Event', plural: 'events', generation: false },
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', generation: false },
  { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', generation: true },
  { apiVersion: 'apps/v1', kind: 'StatefulSet', plural: 'statefulsets', generation: true },
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', generation: true },
  { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', generation: true },
];

interface PodLog {
  lines: { time: string; text: string }[];
  ended: boolean;
  followers: Set<http.ServerResponse>;
}

const STATEFULSET_MUTABLE = ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'];

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
}

class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export class KubeStandIn {
  /** Every request, in order (tests check fieldManager, force, selectors). */
  readonly requests: RecordedRequest[] = [];
  private readonly store = new Map<string, KubeObject>();
  /** The field manager that last applied each object (by uid); real servers keep this in metadata.managedFields. */
  private readonly managers = new Map<string, string>();
  private readonly namespaces: Set<string>;
  private readonly forbidden = new Set<string>();
  private readonly logs = new Map<string, PodLog>();
  private readonly token = randomBytes(16).toString('hex');
  private revision = 1;
  private clusterIps = 10;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    namespaces: string[],
  ) {
    this.namespaces = new Set(namespaces);
  }

  /** Starts on a free loopback port with the given namespaces (applying into another one is a 404, as in a cluster). */
  static async start(options: { namespaces?: string[] } = {}): Promise<KubeStandIn> {
    const holder: { standIn?: KubeStandIn } = {};
    const server = http.createServer((request, response) => {
      void holder.standIn?.handle(request, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    holder.standIn = new KubeStandIn(server, `http://127.0.0.1:${port}`, options.namespaces ?? ['default']);
    return holder.standIn;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A KubeConfig built in code that points the official client here, with a bearer token. */
  kubeConfig(namespace = 'default'): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'stand-in', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'listener', token: this.token }],
      contexts: [{ name: 'stand-in', cluster: 'stand-in', user: 'listener', namespace }],
      currentContext: 'stand-in',
    });
    return config;
  }

  /** Makes `verb` on `plural` answer 403, as for a service account without that permission. */
  forbid(verb: 'get' | 'list' | 'patch' | 'delete', plural: string): void {
    this.forbidden.add(`${verb} ${plural}`);
  }

  object(kind: string, namespace: string, name: string): KubeObject | undefined {
    const found = this.store.get(key(kindInfo(kind).apiVersion, kind, namespace, name));
    return found ? structuredClone(found) : undefined;
  }

  objects(filter: { kind?: string; namespace?: string } = {}): KubeObject[] {
    return [...this.store.values()]
      .filter((o) => (filter.kind === undefined || o.kind === filter.kind) && (filter.namespace === undefined || o.metadata.namespace === filter.namespace))
      .map((o) => structuredClone(o));
  }

  /** Plays a person with `kubectl edit`: changes an object in place (a spec change bumps its generation). */
  edit(kind: string, namespace: string, name: string, change: (object: KubeObject) => void): void {
    const object = this.required(kind, namespace, name);
    change(object);
    if (kindInfo(kind).generation) object.metadata.generation = (object.metadata.generation ?? 1) + 1;
    object.metadata.resourceVersion = this.nextRevision();
  }

  /** Plays a controller: replaces the status of an object. */
  setStatus(kind: string, namespace: string, name: string, status: Record<string, unknown>): void {
    const object = this.required(kind, namespace, name);
    object.status = structuredClone(status);
    object.metadata.resourceVersion = this.nextRevision();
  }

  /**
   * Plays a finished rollout: the Deployment's or StatefulSet's status says every replica
   * is updated, ready and available, and its pods (from the current template) are running and ready.
   */
  markRolledOut(kind: 'Deployment' | 'StatefulSet', namespace: string, name: string): void {
    const object = this.required(kind, namespace, name);
    const replicas = typeof object.spec?.replicas === 'number' ? object.spec.replicas : 1;
    const generation = object.metadata.generation ?? 1;
    const counts = { replicas, updatedReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas };
    this.setStatus(
      kind,
      namespace,
      name,
      kind === 'Deployment'
        ? {
            observedGeneration: generation,
            ...counts,
            conditions: [
              { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
              { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
            ],
          }
        : {
            observedGeneration: generation,
            ...counts,
            currentReplicas: replicas,
            currentRevision: `${name}-${generation}`,
            updateRevision: `${name}-${generation}`,
          },
    );
    for (const pod of this.objects({ kind: 'Pod', namespace })) {
      if (pod.metadata.ownerReferences?.some((ref) => ref.uid === object.metadata.uid)) this.store.delete(key('v1', 'Pod', namespace, pod.metadata.name));
    }
    for (let i = 0; i < replicas; i++) {
      this.addPod(kind, namespace, name, {
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
        containerStatuses: this.containerNames(object).map((container) => ({
          name: container,
          ready: true,
          started: true,
          restartCount: 0,
          image: 'image',
          imageID: 'image-id',
          state: { running: { startedAt: new Date().toISOString() } },
        })),
      });
    }
  }

  /**
   * Plays the workload controller: adds one pod from the workload's current template, owned
   * by it, with the given status (and labels over the template's, for a pod of an older revision).
   */
  addPod(
    kind: 'Deployment' | 'StatefulSet' | 'Job',
    namespace: string,
    workload: string,
    status: Record<string, unknown>,
    labels: Record<string, string> = {},
  ): string {
    const owner = this.required(kind, namespace, workload);
    const template = (owner.spec?.template ?? {}) as { metadata?: { labels?: Record<string, string> }; spec?: Record<string, unknown> };
    const name = `${workload}-${randomBytes(3).toString('hex')}`;
    this.insert({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...this.newMetadata(name, namespace),
        labels: { ...template.metadata?.labels, ...(kind === 'Job' ? { 'job-name': workload, 'batch.kubernetes.io/job-name': workload } : {}), ...labels },
        ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: workload, uid: owner.metadata.uid }],
      },
      spec: structuredClone(template.spec ?? {}),
      status: structuredClone(status),
    });
    return name;
  }

  /** Plays the kubelet: appends lines to a pod's log (each stamped now), and sends them to whoever follows it. */
  writeLog(namespace: string, pod: string, lines: string[]): void {
    const log = this.podLog(namespace, pod);
    for (const text of lines) {
      const line = { time: nanoTime(), text };
      log.lines.push(line);
      for (const follower of log.followers) follower.write(`${line.time} ${text}\n`);
    }
  }

  /** The pod's container exited: its log is complete, and every follow of it ends. */
  endLog(namespace: string, pod: string): void {
    const log = this.podLog(namespace, pod);
    log.ended = true;
    for (const follower of log.followers) follower.end();
    log.followers.clear();
  }

  /** Plays a dropped connection: every follow of the pod's log ends although the container still runs. */
  dropLogStreams(namespace: string, pod: string): void {
    const log = this.podLog(namespace, pod);
    for (const follower of log.followers) follower.end();
    log.followers.clear();
  }

  /** How many clients follow the pod's log now. */
  logFollowers(namespace: string, pod: string): number {
    return this.podLog(namespace, pod).followers.size;
  }

  private podLog(namespace: string, pod: string): PodLog {
    const logKey = `${namespace}/${pod}`;
    let log = this.logs.get(logKey);
    if (!log) {
      log = { lines: [], ended: false, followers: new Set() };
      this.logs.set(logKey, log);
    }
    return log;
  }

  /** Answers GET pods/{name}/log; a follow keeps the response open (it is not a [code, body] answer). */
  private serveLog(namespace: string, pod: string, query: URLSearchParams, response: http.ServerResponse): void {
    const object = this.store.get(key('v1', 'Pod', namespace, pod));
    if (!object) throw notFound(kindInfo('Pod') as KindInfo, pod);
    const phase = (object.status as { phase?: string } | undefined)?.phase;
    if (phase === 'Pending')
      throw new ApiError(400, 'BadRequest', `container "${query.get('container')}" in pod "${pod}" is waiting to start: ContainerCreating`);
    const log = this.podLog(namespace, pod);
    const stamps = query.get('timestamps') === 'true';
    const since = query.get('sinceTime');
    response.writeHead(200, { 'Content-Type': 'text/plain' });
    // As the kubelet: the answer starts at once, before any line.
    response.flushHeaders();
    for (const line of log.lines) {
      // sinceTime has a precision of seconds, as the kubelet reads it.
      if (since && line.time.slice(0, 19) < since.slice(0, 19)) continue;
      response.write(stamps ? `${line.time} ${line.text}\n` : `${line.text}\n`);
    }
    if (log.ended || query.get('follow') !== 'true') {
      response.end();
      return;
    }
    log.followers.add(response);
    response.on('close', () => log.followers.delete(response));
  }

  /** Plays any other controller (a StatefulSet's claims, an object someone created by hand): stores the object as given, with a uid. */
  addObject(object: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string; [field: string]: unknown };
    [field: string]: unknown;
  }): KubeObject {
    kindInfo(object.kind);
    const stored = {
      ...structuredClone(object),
      metadata: { ...structuredClone(object.metadata), ...this.newMetadata(object.metadata.name, object.metadata.namespace) },
    } as KubeObject;
    this.insert(stored);
    return structuredClone(stored);
  }

  /** Plays the kubelet's or scheduler's event recorder. */
  addEvent(namespace: string, event: { involvedObject: { kind: string; name: string }; reason: string; message: string; type?: string; count?: number }): void {
    const name = `${event.involvedObject.name}.${randomBytes(4).toString('hex')}`;
    const involved = this.store.get(key(kindInfo(event.involvedObject.kind).apiVersion, event.involvedObject.kind, namespace, event.involvedObject.name));
    this.insert({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: this.newMetadata(name, namespace),
      involvedObject: { ...event.involvedObject, namespace, uid: involved?.metadata.uid },
      reason: event.reason,
      message: event.message,
      type: event.type ?? 'Warning',
      count: event.count ?? 1,
    });
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    this.requests.push({ method: request.method ?? 'GET', path: url.pathname, query: url.searchParams, contentType: request.headers['content-type'] });
    try {
      if (request.headers.authorization !== `Bearer ${this.token}`) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      const body = await readBody(request);
      const podLog = url.pathname.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/);
      if (podLog && request.method === 'GET') {
        if (this.forbidden.has('get pods/log')) throw new ApiError(403, 'Forbidden', `pods "${podLog[2]}" is forbidden: cannot get resource "pods/log"`);
        this.serveLog(decodeURIComponent(podLog[1] as string), decodeURIComponent(podLog[2] as string), url.searchParams, response);
        return;
      }
      const [code, answer] = this.route(request.method ?? 'GET', url, request.headers['content-type'], body);
      send(response, code, answer);
    } catch (error) {
      if (error instanceof ApiError) send(response, error.code, status(error.code, error.reason, error.message));
      else if (error instanceof SelectorError) send(response, 400, status(400, 'BadRequest', error.message));
      else send(response, 500, status(500, 'InternalError', (error as Error).stack ?? String(error)));
    }
  }

  private route(method: string, url: URL, contentType: string | undefined, body: string): [number, unknown] {
    const discovery = url.pathname.match(/^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))$/);
    if (discovery && method === 'GET') return [200, resourceList(discovery[1] ?? (discovery[2] as string))];
    const match = url.pathname.match(/^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/);
    if (!match) throw new ApiError(404, 'NotFound', `the stand-in serves no ${method} ${url.pathname}`);
    const apiVersion = match[1] ?? (match[2] as string);
    const namespace = decodeURIComponent(match[3] as string);
    const info = KINDS.find((k) => k.apiVersion === apiVersion && k.plural === match[4]);
    if (!info) throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${apiVersion} ${match[4]})`);
    const name = match[5] === undefined ? undefined : decodeURIComponent(match[5]);
    const verb = method === 'GET' ? (name ? 'get' : 'list') : method.toLowerCase();
    if (this.forbidden.has(`${verb} ${info.plural}`)) {
      const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
      throw new ApiError(
        403,
        'Forbidden',
        `${info.plural}${group ? `.${group}` : ''}${name ? ` "${name}"` : ''} is forbidden: User "system:serviceaccount:berth:berth-listener" cannot ${verb} resource "${info.plural}" in API group "${group}" in the namespace "${namespace}"`,
      );
    }
    if (method === 'GET' && name) return [200, this.read(info, namespace, name)];
    if (method === 'GET') return [200, this.list(info, namespace, url.searchParams)];
    if (method === 'PATCH' && name) return this.apply(info, namespace, name, url.searchParams, contentType, body);
    if (method === 'DELETE' && name) return [200, this.delete(info, namespace, name, url.searchParams, body)];
    throw new ApiError(405, 'MethodNotAllowed', `the stand-in does not implement ${method} on ${url.pathname}`);
  }

  private read(info: KindInfo, namespace: string, name: string): KubeObject {
    const found = this.store.get(key(info.apiVersion, info.kind, namespace, name));
    if (!found) throw notFound(info, name);
    return found;
  }

  private list(info: KindInfo, namespace: string, query: URLSearchParams): unknown {
    const labels = parseSelector(query.get('labelSelector'));
    const fields = parseSelector(query.get('fieldSelector'));
    const items = [...this.store.values()]
      .filter((o) => o.kind === info.kind && o.apiVersion === info.apiVersion && o.metadata.namespace === namespace)
      .filter((o) => matches(labels, (label) => o.metadata.labels?.[label]) && matches(fields, (path) => fieldAt(o, path)))
      // Items of a list carry no apiVersion or kind: the list's own say what they are.
      .map(({ apiVersion: _apiVersion, kind: _kind, ...rest }) => rest);
    return { apiVersion: info.apiVersion, kind: `${info.kind}List`, metadata: { resourceVersion: String(this.revision) }, items };
  }

  private apply(info: KindInfo, namespace: string, name: string, query: URLSearchParams, contentType: string | undefined, body: string): [number, unknown] {
    if (contentType?.split(';')[0]?.trim() !== 'application/apply-patch+yaml') {
      throw new ApiError(415, 'UnsupportedMediaType', `the stand-in only implements server-side apply, not PATCH with ${contentType}`);
    }
    const manager = query.get('fieldManager');
    if (!manager) throw new ApiError(400, 'BadRequest', 'PATCH, fieldManager: Required value: is required for apply patch');
    // Plain YAML (JSON is YAML), as the API server reads it: the client's typed loader would drop unknown fields.
    const applied = yaml.load(body) as Record<string, unknown>;
    const metadata = (applied.metadata ?? {}) as Record<string, unknown>;
    if (applied.apiVersion !== info.apiVersion || applied.kind !== info.kind) {
      throw new ApiError(
        400,
        'BadRequest',
        `apply body is ${String(applied.apiVersion)} ${String(applied.kind)}, the URL names ${info.apiVersion} ${info.kind}`,
      );
    }
    if (metadata.name !== name)
      throw new ApiError(400, 'BadRequest', `the name of the object (${String(metadata.name)}) does not match the name on the URL (${name})`);
    if (metadata.namespace !== undefined && metadata.namespace !== namespace) {
      throw new ApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    if (!this.namespaces.has(namespace)) throw new ApiError(404, 'NotFound', `namespaces "${namespace}" not found`);
    const storeKey = key(info.apiVersion, info.kind, namespace, name);
    const existing = this.store.get(storeKey);
    if (!existing) return [201, this.create(info, namespace, applied, manager)];
    const owner = this.managers.get(existing.metadata.uid);
    if (owner !== manager && query.get('force') !== 'true') {
      throw new ApiError(409, 'Conflict', `Apply failed with 1 conflict: conflict with "${owner}": .spec`);
    }
    const next = this.merged(info, existing, applied);
    this.checkImmutable(info, existing, next);
    this.managers.set(existing.metadata.uid, manager);
    if (sameContent(existing, next)) return [200, existing];
    next.metadata.resourceVersion = this.nextRevision();
    if (info.generation && JSON.stringify(existing.spec) !== JSON.stringify(next.spec)) next.metadata.generation = (existing.metadata.generation ?? 1) + 1;
    this.store.set(storeKey, next);
    return [200, next];
  }

  private create(info: KindInfo, namespace: string, applied: Record<string, unknown>, manager: string): KubeObject {
    const metadata = applied.metadata as KubeObject['metadata'];
    const object = structuredClone(applied) as KubeObject;
    object.metadata = {
      ...structuredClone(metadata),
      ...this.newMetadata(metadata.name, namespace),
      ...(info.generation ? { generation: 1 } : {}),
    };
    this.managers.set(object.metadata.uid, manager);
    if (info.kind === 'Deployment' && object.spec && object.spec.replicas === undefined) object.spec.replicas = 1;
    if (info.kind === 'Service' && object.spec && object.spec.clusterIP === undefined) object.spec.clusterIP = `10.96.0.${this.clusterIps++}`;
    object.status = {};
    this.store.set(key(info.apiVersion, info.kind, namespace, metadata.name), object);
    return object;
  }

  /** The applied configuration plus what the server (or, for replicas, an autoscaler) set. */
  private merged(info: KindInfo, existing: KubeObject, applied: Record<string, unknown>): KubeObject {
    const next = structuredClone(applied) as KubeObject;
    const appliedMetadata = applied.metadata as KubeObject['metadata'];
    next.metadata = {
      ...structuredClone(appliedMetadata),
      uid: existing.metadata.uid,
      namespace: existing.metadata.namespace,
      creationTimestamp: existing.metadata.creationTimestamp,
      resourceVersion: existing.metadata.resourceVersion,
      ...(existing.metadata.generation !== undefined ? { generation: existing.metadata.generation } : {}),
    };
    if (info.kind === 'Deployment' && next.spec && next.spec.replicas === undefined) next.spec.replicas = existing.spec?.replicas;
    if (info.kind === 'Service' && next.spec && next.spec.clusterIP === undefined) next.spec.clusterIP = existing.spec?.clusterIP;
    next.status = existing.status;
    return next;
  }

  private checkImmutable(info: KindInfo, existing: KubeObject, next: KubeObject): void {
    const name = existing.metadata.name;
    if (info.kind === 'Deployment' && JSON.stringify(existing.spec?.selector) !== JSON.stringify(next.spec?.selector)) {
      throw new ApiError(422, 'Invalid', `Deployment.apps "${name}" is invalid: spec.selector: Invalid value: field is immutable`);
    }
    if (info.kind === 'StatefulSet') {
      const frozen = (spec: Record<string, unknown> | undefined) =>
        JSON.stringify(
          Object.fromEntries(
            Object.entries(spec ?? {})
              .filter(([field]) => !STATEFULSET_MUTABLE.includes(field))
              .sort(),
          ),
        );
      if (frozen(existing.spec) !== frozen(next.spec)) {
        throw new ApiError(
          422,
          'Invalid',
          `StatefulSet.apps "${name}" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`,
        );
      }
    }
  }

  private delete(info: KindInfo, namespace: string, name: string, query: URLSearchParams, body: string): unknown {
    const object = this.store.get(key(info.apiVersion, info.kind, namespace, name));
    if (!object) throw notFound(info, name);
    const options = body ? (JSON.parse(body) as { propagationPolicy?: string }) : {};
    const policy = query.get('propagationPolicy') ?? options.propagationPolicy ?? 'Background';
    if (!['Background', 'Foreground', 'Orphan'].includes(policy)) throw new ApiError(400, 'BadRequest', `unknown propagationPolicy ${policy}`);
    this.store.delete(key(info.apiVersion, info.kind, namespace, name));
    this.managers.delete(object.metadata.uid);
    if (policy === 'Orphan') {
      for (const dependent of this.store.values()) {
        const refs = dependent.metadata.ownerReferences?.filter((ref) => ref.uid !== object.metadata.uid);
        if (refs && refs.length !== dependent.metadata.ownerReferences?.length) dependent.metadata.ownerReferences = refs;
      }
    }
    return { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name, kind: info.plural, uid: object.metadata.uid } };
  }

  /** Plays the garbage collector: deletes, until none is left, every object with owner references none of which exists. */
  collectGarbage(): void {
    for (;;) {
      const uids = new Set([...this.store.values()].map((o) => o.metadata.uid));
      const orphans = [...this.store.entries()].filter(([, o]) => {
        const refs = o.metadata.ownerReferences ?? [];
        return refs.length > 0 && refs.every((ref) => !uids.has(ref.uid));
      });
      if (orphans.length === 0) return;
      for (const [storeKey, orphan] of orphans) {
        this.store.delete(storeKey);
        this.managers.delete(orphan.metadata.uid);
      }
    }
  }

  private insert(object: KubeObject): void {
    this.store.set(key(object.apiVersion, object.kind, object.metadata.namespace, object.metadata.name), object);
  }

  private required(kind: string, namespace: string, name: string): KubeObject {
    const found = this.store.get(key(kindInfo(kind).apiVersion, kind, namespace, name));
    if (!found) throw new Error(`stand-in: no ${kind} ${namespace}/${name}`);
    return found;
  }

  private containerNames(object: KubeObject): string[] {
    const template = object.spec?.template as { spec?: { containers?: { name: string }[] } } | undefined;
    return (template?.spec?.containers ?? []).map((c) => c.name);
  }

  private newMetadata(name: string, namespace: string): KubeObject['metadata'] {
    return { name, namespace, uid: randomUUID(), resourceVersion: this.nextRevision(), creationTimestamp: new Date().toISOString() };
  }

  private nextRevision(): string {
    this.revision += 1;
    return String(this.revision);
  }
}

function kindInfo(kind: string): KindInfo {
  const info = KINDS.find((k) => k.kind === kind);
  if (!info) throw new Error(`stand-in: unknown kind ${kind}`);
  return info;
}

/** An RFC 3339 time with nanoseconds, as the kubelet stamps log lines; strictly increasing within the process. */
let lastNano = 0n;
function nanoTime(): string {
  const now = BigInt(Date.now()) * 1_000_000n;
  lastNano = now > lastNano ? now : lastNano + 1n;
  const seconds = new Date(Number(lastNano / 1_000_000_000n) * 1000).toISOString().slice(0, 19);
  return `${seconds}.${String(lastNano % 1_000_000_000n).padStart(9, '0')}Z`;
}

function key(apiVersion: string, kind: string, namespace: string, name: string): string {
  return `${apiVersion}/${kind}/${namespace}/${name}`;
}

function notFound(info: KindInfo, name: string): ApiError {
  const group = info.apiVersion.includes('/') ? `.${info.apiVersion.split('/')[0]}` : '';
  return new ApiError(404, 'NotFound', `${info.plural}${group} "${name}" not found`);
}

/** Equal apart from resourceVersion, whatever the order of keys: a no-op apply changes nothing. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  const comparable = (o: KubeObject) => JSON.stringify(canonical({ ...o, metadata: { ...o.metadata, resourceVersion: '' } }));
  return comparable(a) === comparable(b);
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

function resourceList(groupVersion: string): unknown {
  const resources = KINDS.filter((k) => k.apiVersion === groupVersion).map((k) => ({
    name: k.plural,
    singularName: k.kind.toLowerCase(),
    namespaced: true,
    kind: k.kind,
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  }));
  if (resources.length === 0) throw new ApiError(404, 'NotFound', `the stand-in serves no group version ${groupVersion}`);
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources };
}

function status(code: number, reason: string, message: string): unknown {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

function send(response: http.ServerResponse, code: number, body: unknown): void {
  response.writeHead(code, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify(body));
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
