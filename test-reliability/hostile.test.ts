/**
 * Hostile input: bodies, queries, paths and headers generated from the OpenAPI document of
 * a running server (the route schemas themselves) and then mutated: wrong types, huge
 * strings, deep nesting, unicode, control characters, NUL bytes, SQL and shell
 * metacharacters, duplicate and prototype keys, malformed JSON, oversize bodies, wrong
 * content types, encoded slashes and dots in paths. Whatever comes in:
 *
 * - never a 5xx;
 * - every 4xx is JSON in the API's form (`{"detail": string}`, or a 422 issue list);
 * - a rejected request leaves every table as it was;
 * - a rejected request never echoes a secret value it carried.
 *
 * Fixed catalogues cover every operation with every kind of mutation; fast-check then
 * explores combinations (seeded: RELIABILITY_SEED replays a run).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { DEFAULT_LIMITS } from '../src/config.js';
import { createRepository, type TempDir, tempDir } from '../test/support/git-repos.js';
import { client } from '../test/support/http.js';
import { startTestServer, type TestServer } from '../test/support/server.js';
import { HOSTILE_STRINGS, valueFor } from './arbitraries.js';
import { EXAMPLE_BODIES, exampleRepository, SECRET_MARKER } from './examples.js';
import {
  type Db,
  encodeURIComponentSafe,
  errorFormProblem,
  type Operation,
  operationsOf,
  type RawResponse,
  runSeed,
  databasesToTest,
  sendRaw,
  changeMarks,
  refreshSnapshot,
  snapshot,
  tablesMarkedChanged,
  snapshotDifference,
  type Snapshot,
} from './support.js';
import { deadline } from '../test/support/deadline.js';
import { describeEachDatabase } from '../test/support/database.js';

const BODY_LIMIT = DEFAULT_LIMITS.bodyLimitBytes;
const NUM_RUNS = Number(process.env.RELIABILITY_RUNS ?? 200);
const PREFIXES = ['', '/api-host'];
const DATABASES = databasesToTest();

// ---------------------------------------------------------------------------------------
// Mutations

type Path = (string | number)[];

function leafPaths(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return [path, ...value.flatMap((item, i) => leafPaths(item, [...path, i]))];
  if (value !== null && typeof value === 'object') {
    return [path, ...Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...path, k]))];
  }
  return [path];
}

function setAt(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy = Array.isArray(value) ? [...value] : { ...(value as Record<string, unknown>) };
  const [head, ...rest] = path as [string | number, ...Path];
  (copy as Record<string | number, unknown>)[head] = setAt((value as Record<string | number, unknown>)[head], rest, replacement);
  return copy;
}

function removeAt(value: unknown, path: Path): unknown {
  if (path.length === 0) return value;
  if (path.length === 1) {
    if (Array.isArray(value)) return value.filter((_, i) => i !== path[0]);
    const { [path[0] as string]: _gone, ...rest } = value as Record<string, unknown>;
    return rest;
  }
  const [head, ...rest] = path as [string | number, ...Path];
  return setAt(value, [head], removeAt((value as Record<string | number, unknown>)[head], rest));
}

const DEEP_MARK = '"__DEEP_PLACEHOLDER__"';
const deepArrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const deepObjects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

/** A placeholder value that becomes raw JSON text (deep nesting) once serialized. */
const rawJson = (text: string) => ({ __raw: text });
function serialize(value: unknown): string {
  const raws: string[] = [];
  const json = JSON.stringify(value, (_key, v) => {
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { __raw?: unknown }).__raw === 'string' && Object.keys(v).length === 1) {
      raws.push((v as { __raw: string }).__raw);
      return '__DEEP_PLACEHOLDER__';
    }
    return v;
  });
  let i = 0;
  return (json ?? '').replace(new RegExp(DEEP_MARK, 'g'), () => raws[i++] ?? 'null');
}

const WRONG_TYPES: unknown[] = [0, -1, 1.5, 1e308, true, false, null, [], [1, 'a'], {}, { nested: { x: 1 } }, '', 'text'];

const mutationArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('wrong-type' as const), value: fc.constantFrom(...WRONG_TYPES) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('hostile-string' as const), value: fc.constantFrom(...HOSTILE_STRINGS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unicode' as const), value: fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('huge-string' as const), value: fc.constantFrom(300, 5_000, 70_000, BODY_LIMIT - 500, BODY_LIMIT + 10) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deep' as const), value: fc.constantFrom(100, 1_000, 10_000, 100_000), objects: fc.boolean() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'remove' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('add-key' as const),
      key: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'extra_field', '', '\u0000', 'a.b', '$where'),
      value: fc.constantFrom<unknown>({ polluted: true }, { prototype: { polluted: true } }, 1, 'x', null),
    }),
  },
);
type Mutation = typeof mutationArb extends fc.Arbitrary<infer T> ? T : never;

/** Applies a mutation at a path; returns the body text to send. */
function mutatedText(body: unknown, path: Path, mutation: Mutation): string {
  switch (mutation.kind) {
    case 'none':
      return serialize(body);
    case 'wrong-type':
    case 'hostile-string':
    case 'unicode':
      return serialize(setAt(body, path, mutation.value));
    case 'huge-string':
      return serialize(setAt(body, path, 'x'.repeat(mutation.value)));
    case 'deep':
      return serialize(setAt(body, path, rawJson(mutation.objects ? deepObjects(mutation.value) : deepArrays(mutation.value))));
    case 'remove':
      return serialize(removeAt(body, path));
    case 'add-key': {
      // JSON.stringify cannot write a `__proto__` own key from a literal: splice the text.
      const target = path.length === 0 ? body : path.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)?.[k], body);
      const objectPath = target !== null && typeof target === 'object' && !Array.isArray(target) ? path : [];
      const root = objectPath.length === 0 && (body === null || typeof body !== 'object' || Array.isArray(body)) ? {} : body;
      const marked = setAt(root, [...objectPath, '__ADD_KEY_PLACEHOLDER__'], mutation.value);
      return serialize(marked).replace('"__ADD_KEY_PLACEHOLDER__"', JSON.stringify(mutation.key));
    }
  }
}

/** Raw-text damage to a valid body. */
const RAW_DAMAGE: ((text: string) => string)[] = [
  (t) => t.slice(0, Math.max(1, Math.floor(t.length / 2))),
  (t) => `${t},`,
  (t) => `${t}garbage`,
  (t) => `${t}${t}`,
  (t) => `\ufeff${t}`,
  (t) => t.replace(/"/g, "'"),
  (t) => t.replace(/:/, ':NaN,"x":'),
  (t) => t.replace(/^\{/, '{"__proto__":{"polluted":true},'),
  (t) => t.replace(/^\{/, '{"constructor":{"prototype":{"polluted":true}},'),
  (t) => t.replace(/^\{("[^"]*")/, '{$1:12345,$1'),
  (t) => t.replace(/^\{("[^"]*")/, '{$1:{"nested":[1,2,3]},$1'),
  (t) => t.replace(/^\{/, '{"a":1,"a":2,"a":{"b":3},'),
  (t) => t.replace(/\}$/, `,"pad":"${' '.repeat(16)}"}`),
  (t) => `${t}${' '.repeat(Math.max(0, BODY_LIMIT - t.length))}`,
  (t) => `${t}${' '.repeat(Math.max(0, BODY_LIMIT + 1 - t.length))}`,
  () => '{',
  () => '{"a":}',
  () => '[1,]',
  () => 'nul',
  () => '\u0000',
  () => '{"a":"\u0000"}',
  () => '{"a":"\\u0000"}',
  () => '{"a":"\\ud800"}',
  () => '{"a":1}/*comment*/',
  () => '',
  () => '   \n\t ',
  () => 'null',
  () => '[]',
  () => '"text"',
  () => '123',
  () => 'true',
  () => deepArrays(10_000),
  () => deepObjects(10_000),
  () => deepArrays(100_000),
  () => deepObjects(100_000),
  () => `{"deep":${deepArrays(10_000)}}`,
  () => `{"deep":${deepArrays(200_000)}}`,
];

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json;;;',
  'application/jsonx',
  'application/vnd.api+json',
  'application/merge-patch+json',
  'text/plain',
  'text/html; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/xml',
  'invalid',
  '*/*',
];

/** Path segments that are not what the route wants. */
const BAD_SEGMENTS = [
  '%ZZ',
  '%',
  '%00',
  'a%00b',
  '..',
  '%2e%2e',
  '%2E%2E%2F%2E%2E%2Fv1%2Fapi-keys',
  '%2F',
  'a%2Fb',
  '.',
  '%2e',
  '%E0%A4%A',
  '%C0%AE%C0%AE',
  '%F0%9F%A6%80',
  encodeURIComponent("'; DROP TABLE deployments; --"),
  encodeURIComponent('$(id)`id`'),
  'x'.repeat(5000),
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff%20',
  '%7B%7D',
  '__proto__',
  'constructor',
];

const QUERY_EXTRAS = [
  '__proto__[polluted]=1',
  'constructor[prototype][polluted]=1',
  '__proto__=1',
  'a=%ZZ',
  '%ZZ=1',
  'a=%00',
  '&&&',
  '=',
  '==&=1',
  `${'k'.repeat(5000)}=1`,
  `v=${'x'.repeat(20_000)}`,
  'a[]=1&a[]=2',
  'a[b][c][d][e][f]=1',
];

// ---------------------------------------------------------------------------------------
// The hunt: sends requests and keeps every distinct problem with its first example

interface Probe {
  method: string;
  /** OpenAPI path, to group problems by route. */
  route: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Secret values the request carried: a rejection must not echo them. */
  label: string;
}

class Hunt {
  readonly problems = new Map<string, { count: number; routes: Set<string>; example: string }>();
  requests = 0;
  /** Answers by status, to show the runs reached handlers (2xx) and not only validation. */
  readonly statuses = new Map<number, number>();
  #current: Snapshot | undefined;
  /** The change marks `#current` was taken at: only the tables whose mark moved are read again. */
  #currentMarks: Record<string, string> = {};
  /** The listener protocol's routes take a listener key (any other key is refused before the body is read). */
  listenerKey: string | undefined;
  /** The build runner routes take a runner key, likewise. */
  runnerKey: string | undefined;

  constructor(
    readonly server: TestServer,
    readonly db: Db,
  ) {}

  async send(probe: Probe): Promise<RawResponse | undefined> {
    const before = this.#current ?? (await this.#resnapshot());
    const key =
      this.listenerKey && probe.route.startsWith('/v1/listener-protocol')
        ? this.listenerKey
        : this.runnerKey && probe.route.startsWith('/v1/runner/')
          ? this.runnerKey
          : this.server.adminKey;
    const headers: Record<string, string> = { 'x-api-key': key, ...probe.headers };
    if (probe.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    const fullPath = `${probe.path}${probe.query !== undefined ? `?${probe.query}` : ''}`;
    this.requests += 1;
    let res: RawResponse;
    try {
      res = await sendRaw(this.server.url, { method: probe.method, path: fullPath, headers, body: probe.body });
    } catch (error) {
      this.#record('no answer', probe, undefined, (error as Error).message);
      await this.#resnapshot();
      return undefined;
    }
    this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
    const marks = await changeMarks(this.db, this.#currentMarks);
    const written = await tablesMarkedChanged(this.db, this.#currentMarks, marks);
    const after = written.length === 0 ? before : await refreshSnapshot(this.db, before, written);
    if (res.status >= 500) {
      this.#record('5xx', probe, res, this.#serverError(res));
    } else if (res.status >= 400) {
      const form = errorFormProblem(res.status, res.contentType, res.text);
      if (form) this.#record('not the API error form', probe, res, form);
      const changed = snapshotDifference(before, after);
      if (changed) this.#record('rejected request changed the database', probe, res, changed);
      const secrets = (probe.body ?? '').match(new RegExp(`${SECRET_MARKER}-[0-9a-f-]{36}`, 'g')) ?? [];
      const echoed = secrets.find((s) => res.text.includes(s));
      if (echoed) this.#record('rejection echoes a secret', probe, res, `echoed ${echoed}`);
    } else if (res.status < 200 || res.status >= 300) {
      this.#record('unexpected status', probe, res, '');
    }
    this.#current = after;
    this.#currentMarks = marks;
    return res;
  }

  async #resnapshot(): Promise<Snapshot> {
    this.#currentMarks = await changeMarks(this.db);
    this.#current = await snapshot(this.db);
    return this.#current;
  }

  /** The error the server logged for a 5xx answer. */
  #serverError(res: RawResponse): string {
    const reqId = res.headers['x-request-id'];
    const line = this.server.logs.find((l) => typeof reqId === 'string' && l.includes(reqId) && /"level":50/.test(l));
    if (!line) return 'nothing logged for it';
    try {
      const parsed = JSON.parse(line) as { err?: { type?: string; message?: string; code?: string } };
      return `server logged: ${parsed.err?.type ?? ''} ${parsed.err?.code ?? ''} ${parsed.err?.message ?? line.slice(0, 300)}`;
    } catch {
      return line.slice(0, 300);
    }
  }

  #record(kind: string, probe: Probe, res: RawResponse | undefined, detail: string): void {
    // One entry per kind of failure, whatever the route: the first example, and where else it showed.
    const signature = `${kind} | ${res?.status ?? '-'} | ${answerClass(res, detail)}`;
    const seen = this.problems.get(signature);
    if (seen) {
      seen.count += 1;
      seen.routes.add(`${probe.method} ${probe.route}`);
      return;
    }
    const short = (s: string | undefined, n: number) =>
      s === undefined ? '(none)' : s.length > n ? `${JSON.stringify(s.slice(0, n))}… (${s.length} chars)` : JSON.stringify(s);
    this.problems.set(signature, {
      count: 1,
      routes: new Set([`${probe.method} ${probe.route}`]),
      example: [
        `  e.g. ${probe.label}: ${probe.method} ${short(probe.path, 160)}${probe.query !== undefined ? ` query ${short(probe.query, 160)}` : ''}`,
        `  headers: ${JSON.stringify(probe.headers ?? {})}`,
        `  body: ${short(probe.body, 240)}`,
        `  answer: ${res ? `${res.status} ${res.contentType} ${short(res.text, 240)}` : '(none)'}`,
        `  ${detail}`,
      ].join('\n'),
    });
  }

  note(signature: string, example: string): void {
    if (!this.problems.has(signature)) this.problems.set(signature, { count: 1, routes: new Set(), example: `  ${example}` });
  }

  /** Fails the test with every distinct problem found so far, then starts a fresh list. */
  assertClean(what: string): void {
    const found = [...this.problems.entries()].map(
      ([signature, p]) =>
        `${signature}\n  ${p.count} requests, on ${[...p.routes].slice(0, 40).join(', ')}${p.routes.size > 40 ? ` and ${p.routes.size - 40} more routes` : ''}\n${p.example}`,
    );
    this.problems.clear();
    assert.equal(found.length, 0, `${what}: ${found.length} distinct problems\n\n${found.join('\n\n')}`);
  }
}

// ---------------------------------------------------------------------------------------

// About 4 min (SQLite) and 6 min (PostgreSQL) on a loaded machine.
describeEachDatabase(
  'hostile input',
  (kind) => {
    let server: TestServer;
    let hunt: Hunt;
    let operations: Operation[];
    const fixtures: Record<string, string> = {};
    const seed = runSeed();
    let repositories: TempDir | undefined;

    before(async () => {
      // No engine: nothing but requests may change the database. No rate limit: thousands of requests.
      server = await startTestServer(kind, { engine: false, limits: { rateLimitPerMinute: 0 } });
      hunt = new Hunt(server, server.berth.db);
      operations = (await operationsOf(server.url)).filter((op) => op.path !== '/ok');
      const api = client(server.url, { key: server.adminKey });
      const deployment = await api('POST', '/v2/deployments', { body: (EXAMPLE_BODIES['POST /v2/deployments'] as () => unknown)() });
      assert.equal(deployment.status, 201, deployment.text);
      const listener = await api('POST', '/v2/listeners', { body: (EXAMPLE_BODIES['POST /v2/listeners'] as () => unknown)() });
      assert.equal(listener.status, 201, listener.text);
      hunt.listenerKey = listener.body.listener_key;
      const runner = await api('POST', '/v1/api-keys', { body: { name: 'hostile-runner', role: 'runner' } });
      assert.equal(runner.status, 201, runner.text);
      hunt.runnerKey = runner.body.key;
      const provider = await api('POST', '/v2/auth/providers', {
        body: { ...(EXAMPLE_BODIES['POST /v2/auth/providers'] as () => object)(), provider_id: 'hostile-provider' },
      });
      assert.equal(provider.status, 200, provider.text);
      repositories = await tempDir('berth-hostile-');
      exampleRepository.path = (await createRepository(repositories.path)).bare;
      const integration = await api('POST', '/v1/integrations/codehost', { body: (EXAMPLE_BODIES['POST /v1/integrations/codehost'] as () => unknown)() });
      assert.equal(integration.status, 201, integration.text);
      // The snapshot sees a write (so "unchanged" below means something).
      const before = await snapshot(server.berth.db);
      const marksBefore = await changeMarks(server.berth.db);
      assert.deepEqual(await tablesMarkedChanged(server.berth.db, marksBefore, await changeMarks(server.berth.db)), [], 'a read moves no change mark');
      assert.equal((await api('PATCH', `/v2/deployments/${deployment.body.id}`, { body: { display_name: 'seen' } })).status, 200);
      assert.ok(snapshotDifference(before, await snapshot(server.berth.db)), 'a PATCH shows in the snapshot');
      const moved = await tablesMarkedChanged(server.berth.db, marksBefore, await changeMarks(server.berth.db));
      assert.ok(moved.includes('deployments'), `a PATCH moves the deployments table's change mark (moved: ${moved.join(', ')})`);
      Object.assign(fixtures, {
        deployment_id: deployment.body.id,
        revision_id: deployment.body.latest_revision_id,
        listener_id: listener.body.id,
        provider_id: 'hostile-provider',
        integration_id: integration.body.id,
      });
    });
    after(async () => {
      const statuses = [...(hunt?.statuses ?? new Map<number, number>()).entries()].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`);
      process.stdout.write(`# hostile input [${kind}]: ${hunt?.requests ?? 0} requests (${statuses.join(' ')}), seed ${seed}\n`);
      await server?.close();
      await repositories?.remove();
    });

    /** Real ids of this workspace, except for DELETE, which must not remove the fixtures. */
    function pathFor(op: Operation, prefix = '', override: Record<string, string> = {}): string {
      const values: Record<string, string> = {};
      for (const name of op.pathParams) {
        values[name] = op.method === 'DELETE' ? (name === 'provider_id' ? 'no-such-provider' : randomUUID()) : (fixtures[name] ?? randomUUID());
      }
      return prefix + op.path.replace(/\{(\w+)\}/g, (_m, name: string) => override[name] ?? (values[name] as string));
    }

    const bodyFor = (op: Operation): unknown => {
      const example = EXAMPLE_BODIES[`${op.method} ${op.path}`];
      if (example && op.method === 'POST' && op.path === '/v2/deployments') {
        // The workspace has a listener, so an image deployment must be placed on it to be accepted.
        const created = example() as { source_config: Record<string, unknown> };
        return { ...created, source_config: { ...created.source_config, listener_id: fixtures.listener_id, listener_config: { k8s_namespace: 'ns-a' } } };
      }
      if (example) return example();
      return fc.sample(valueFor(op.body), { numRuns: 1, seed })[0];
    };

    test('every operation: malformed, duplicate-key, prototype-key, deep and oversize bodies, wrong content types', async () => {
      for (const [n, op] of operations.filter((o) => o.body).entries()) {
        const prefix = PREFIXES[n % PREFIXES.length] as string;
        const valid = serialize(bodyFor(op));
        for (const [i, damage] of RAW_DAMAGE.entries()) {
          await hunt.send({ method: op.method, route: op.path, path: pathFor(op, prefix), body: damage(serialize(bodyFor(op))), label: `raw damage #${i}` });
        }
        for (const contentType of CONTENT_TYPES) {
          await hunt.send({
            method: op.method,
            route: op.path,
            path: pathFor(op, prefix),
            headers: { 'content-type': contentType },
            body: serialize(bodyFor(op)),
            label: `content-type ${contentType}`,
          });
        }
        // A body without any content type, and the body limit exactly and one byte past it.
        await hunt.send({
          method: op.method,
          route: op.path,
          path: pathFor(op, prefix),
          headers: { 'content-type': '' },
          body: valid,
          label: 'no content-type',
        });
        const exact = await hunt.send({
          method: op.method,
          route: op.path,
          path: pathFor(op, prefix),
          body: valid + ' '.repeat(BODY_LIMIT - Buffer.byteLength(valid)),
          label: 'body exactly at the limit',
        });
        if (exact?.status === 413) hunt.note(`413 at the limit`, `${op.method} ${op.path}: a body of exactly ${BODY_LIMIT} bytes answered 413`);
        const over = await hunt.send({
          method: op.method,
          route: op.path,
          path: pathFor(op, prefix),
          body: valid + ' '.repeat(BODY_LIMIT + 1 - Buffer.byteLength(valid)),
          label: 'body one byte over the limit',
        });
        if (over && over.status !== 413) hunt.note(`no 413 over the limit`, `${op.method} ${op.path}: a body one byte over the limit answered ${over.status}`);
      }
      hunt.assertClean('raw bodies');
    });

    test('every field of a valid body: hostile strings and wrong types', async () => {
      const values: unknown[] = [
        'a\u0000b',
        '\ud800x',
        "x'; DROP TABLE deployments; --",
        '$(touch /tmp/berth-pwned)`id`',
        '\u0001\u001b[31m\r\nX: y\u202e',
        'x'.repeat(70_000),
        0,
        {},
      ];
      for (const op of operations.filter((o) => o.body)) {
        const paths = leafPaths(bodyFor(op)).filter((p) => p.length > 0);
        for (const path of paths) {
          for (const value of values) {
            const body = setAt(bodyFor(op), path, value);
            await hunt.send({
              method: op.method,
              route: op.path,
              path: pathFor(op, PREFIXES[paths.indexOf(path) % 2]),
              body: serialize(body),
              label: `${JSON.stringify(path)} = ${JSON.stringify(value)?.slice(0, 30)}`,
            });
          }
        }
      }
      hunt.assertClean('hostile field values');
    });

    test('every operation: path segments with encoded slashes, dots, NUL and garbage, at the root and under /api-host', async () => {
      for (const op of operations) {
        for (const name of op.pathParams) {
          for (const [i, segment] of BAD_SEGMENTS.entries()) {
            await hunt.send({
              method: op.method,
              route: op.path,
              path: pathFor(op, PREFIXES[i % PREFIXES.length], { [name]: segment }),
              body: op.body ? serialize(bodyFor(op)) : undefined,
              label: `${name} = ${segment.slice(0, 40)}`,
            });
          }
        }
      }
      // Paths that try to climb out of the API or smuggle a second route.
      for (const path of [
        `/v2/deployments/${fixtures.deployment_id}/..%2F..%2F..%2Fv1%2Fapi-keys`,
        '/v2/deployments/%2e%2e/%2e%2e/v1/api-keys',
        '/api-host/%2e%2e/v1/api-keys',
        '/api-host/..%2Fv1%2Fworkspaces',
        '//v2//deployments//',
        '/v2/deployments%00',
        '/v2/deployments%2F',
        '/V2/DEPLOYMENTS',
        `/v2/deployments/${fixtures.deployment_id};x=1`,
        '/v2/deployments/*',
        `/${'a/'.repeat(2000)}`,
      ]) {
        for (const method of ['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS']) {
          await hunt.send({ method, route: '(crafted path)', path, label: path.slice(0, 50) });
        }
      }
      hunt.assertClean('path segments');
    });

    test('every operation: hostile query strings and headers', async () => {
      const queryValues = [
        "'; DROP TABLE deployments; --",
        '%',
        '_',
        '\\',
        'a\u0000b',
        '\u0001\u001b[31m\r\n',
        '漢字🦀',
        '\ud800',
        'x'.repeat(10_000),
        '',
        '-1',
        '1e20',
        '1e309',
        'Infinity',
        '__proto__',
        'true',
        '[]',
      ];
      const headerCases: [string, string[]][] = [
        ['x-tenant-id', ["'; DROP TABLE workspaces; --", '../../etc/passwd', '%00', '$(id)', '', ' ', randomUUID(), fixtures.deployment_id as string]],
        ['x-request-id', ['../../etc', 'x'.repeat(500), '"quoted"', '']],
        ['last-event-id', ['-1', '1e9999', 'abc', '99999999999999999999']],
        ['authorization', ['Bearer', 'Bearer ', 'Basic Zm9vOmJhcg==', `Bearer ${server.adminKey} extra`]],
        ['accept', ['text/html', 'application/xml', '*/*;q=0']],
      ];
      for (const [i, op] of operations.entries()) {
        const prefix = PREFIXES[i % PREFIXES.length] as string;
        const body = op.body ? serialize(bodyFor(op)) : undefined;
        const send = (label: string, query: string | undefined, headers?: Record<string, string>) =>
          hunt.send({ method: op.method, route: op.path, path: pathFor(op, prefix), query, headers, body, label });
        for (const param of op.query) {
          // Long polls: only values that answer at once (a valid wait would hold the request).
          const values = param.name === 'wait_for_terminal' || param.name === 'wait' ? ['-1', '301', 'abc', '1e400', 'NaN', 'Infinity', ''] : queryValues;
          for (const value of values) await send(`${param.name}=${value.slice(0, 30)}`, `${param.name}=${encodeURIComponentSafe(value)}`);
          await send(`${param.name} twice`, `${param.name}=1&${param.name}=2`);
          await send(`${param.name}[]`, `${param.name}[]=1`);
          await send(`${param.name}=%ZZ`, `${param.name}=%ZZ`);
        }
        for (const extra of QUERY_EXTRAS) await send(`query ${extra.slice(0, 30)}`, extra);
        for (const [header, values] of headerCases) {
          for (const value of values) {
            // Authorization only counts without X-Api-Key.
            await send(`${header}: ${value.slice(0, 30)}`, undefined, header === 'authorization' ? { [header]: value, 'x-api-key': '' } : { [header]: value });
          }
        }
      }
      hunt.assertClean('queries and headers');
    });

    test(`property: bodies generated from the schemas, mutated (${NUM_RUNS} runs)`, async () => {
      const withBody = operations.filter((o) => o.body);
      const arb = fc
        .record({ op: fc.constantFrom(...withBody), prefix: fc.constantFrom(...PREFIXES), fromExample: fc.boolean(), mutation: mutationArb, pick: fc.nat() })
        .chain((r) =>
          (r.fromExample && EXAMPLE_BODIES[`${r.op.method} ${r.op.path}`] ? fc.constant(null).map(() => bodyFor(r.op)) : valueFor(r.op.body)).map((body) => ({
            ...r,
            body,
          })),
        );
      await fc.assert(
        fc.asyncProperty(arb, async ({ op, prefix, mutation, pick, body }) => {
          const paths = leafPaths(body);
          const path = paths[pick % paths.length] as Path;
          await hunt.send({
            method: op.method,
            route: op.path,
            path: pathFor(op, prefix),
            body: mutatedText(body, path, mutation),
            label: `mutation ${mutation.kind}`,
          });
        }),
        { numRuns: NUM_RUNS, seed },
      );
      hunt.assertClean('generated bodies');
    });

    test(`property: queries generated from the schemas, mutated (${NUM_RUNS} runs)`, async () => {
      const withQuery = operations.filter((o) => o.query.length > 0);
      const arb = fc.constantFrom(...withQuery).chain((op) =>
        fc.record({
          op: fc.constant(op),
          prefix: fc.constantFrom(...PREFIXES),
          params: fc.tuple(
            ...op.query.map((param) =>
              fc.option(
                fc.oneof(
                  param.name === 'wait_for_terminal' || param.name === 'wait' ? fc.constantFrom<unknown>(0, 0.01, -1, 301, 'x') : valueFor(param.schema),
                  fc.constantFrom<unknown>(...HOSTILE_STRINGS, ...WRONG_TYPES),
                  fc.string({ unit: 'binary', maxLength: 30 }),
                ),
              ),
            ),
          ),
          extra: fc.option(fc.constantFrom(...QUERY_EXTRAS)),
          raw: fc.boolean(),
        }),
      );
      await fc.assert(
        fc.asyncProperty(arb, async ({ op, prefix, params, extra, raw }) => {
          const parts = op.query.flatMap((param, i) => {
            const value = params[i];
            if (value === null || value === undefined) return [];
            const text = typeof value === 'string' ? value : JSON.stringify(value);
            // Raw: only the characters HTTP cannot carry are escaped, the rest goes as is.
            return [`${param.name}=${raw ? text.replace(/[^\x21-\x7e]|[#&%]/g, encodeURIComponentSafe) : encodeURIComponentSafe(text)}`];
          });
          if (extra) parts.push(extra);
          await hunt.send({
            method: op.method,
            route: op.path,
            path: pathFor(op, prefix),
            query: parts.join('&'),
            body: op.body ? serialize(bodyFor(op)) : undefined,
            label: 'generated query',
          });
        }),
        { numRuns: NUM_RUNS, seed },
      );
      hunt.assertClean('generated queries');
    });

    test(`property: path parameters generated and mutated (${NUM_RUNS} runs)`, async () => {
      const withParams = operations.filter((o) => o.pathParams.length > 0);
      const segment = fc.oneof(
        fc.uuid(),
        fc.constantFrom(...BAD_SEGMENTS),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).map(encodeURIComponentSafe),
        fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s !== '')).map(encodeURIComponentSafe),
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,20}$/),
      );
      const arb = fc
        .constantFrom(...withParams)
        .chain((op) =>
          fc.record({ op: fc.constant(op), prefix: fc.constantFrom(...PREFIXES), values: fc.tuple(...op.pathParams.map(() => fc.option(segment))) }),
        );
      await fc.assert(
        fc.asyncProperty(arb, async ({ op, prefix, values }) => {
          const override: Record<string, string> = {};
          op.pathParams.forEach((name, i) => {
            const value = values[i];
            if (value !== null && value !== undefined) override[name] = value;
          });
          await hunt.send({
            method: op.method,
            route: op.path,
            path: pathFor(op, prefix, override),
            body: op.body ? serialize(bodyFor(op)) : undefined,
            label: 'generated path',
          });
        }),
        { numRuns: NUM_RUNS, seed },
      );
      hunt.assertClean('generated paths');
    });
  },
  { kinds: DATABASES, timeout: deadline(15 * 60_000) },
);

/** What kind of answer it was, with ids and numbers taken out, to group alike failures. */
function answerClass(res: RawResponse | undefined, detail: string): string {
  if (!res) return detail.slice(0, 80);
  if (res.status >= 500)
    return detail
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>')
      .replace(/\d+/g, 'N')
      .slice(0, 120);
  const code = /"code":"(FST_[A-Z_]+)"/.exec(res.text)?.[1];
  if (code) return code;
  return (res.contentType ?? 'no content-type').split(';')[0] as string;
}
