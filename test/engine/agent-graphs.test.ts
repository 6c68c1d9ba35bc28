import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { blamedGraphs, type ExpectedGraph, listedGraphs, quoteLines } from '../../src/containers/runtime/graphs.js';
import { redact } from '../../src/containers/runtime/logs.js';

const GRAPHS: ExpectedGraph[] = [
  { id: 'echo', spec: './src/graph.ts:graph' },
  { id: 'broken', spec: './src/broken.ts:graph' },
];

/**
 * What the LangGraph.js agent server (@langchain/langgraph-api 1.5.1 on Berth's base image)
 * wrote when a graph's module threw at import, or named an export that is not there: it
 * logs every graph as registered, then stops before it listens (GET /ok never answers).
 */
const THROWS_AT_IMPORT = [
  '{"timestamp":"2026-11-26T07:06:51.377Z","level":"info","event":"Registering graph with id \'echo\'","graph_id":"echo"}',
  '{"timestamp":"2026-11-26T07:06:51.378Z","level":"info","event":"Registering graph with id \'broken\'","graph_id":"broken"}',
  '{"timestamp":"2026-11-26T07:06:51.418Z","level":"error","event":"agent server: could not start","error":"Error: broken graph module failed at import: token=[redacted]\\n    at <anonymous> (/deps/proj/src/broken.ts:3:7)\\n    at async resolveGraph (/api/node_modules/@langchain/langgraph-api/dist/graph/load.utils.mjs:27:19)\\n    at async Promise.all (index 1)"}',
];
const MISSING_EXPORT = [
  '{"timestamp":"2026-11-26T07:07:07.738Z","level":"info","event":"Registering graph with id \'nope\'","graph_id":"nope"}',
  '{"timestamp":"2026-11-26T07:07:08.764Z","level":"error","event":"agent server: could not start","error":"Error: Failed to load graph: graph is nullush\\n    at <anonymous> (/api/node_modules/@langchain/langgraph-api/dist/graph/load.utils.mjs:31:19)\\n    at async Promise.all (index 1)"}',
];

describe('which graphs an agent server serves, and which its output blames', () => {
  let server: Server;
  let url: string;
  /** What POST /assistants/search answers next, and the bodies it was sent. */
  let answer: { status: number; body: unknown } = { status: 200, body: [] };
  const requests: unknown[] = [];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/assistants/search') {
          res.writeHead(404).end();
          return;
        }
        requests.push(JSON.parse(body));
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const signal = () => AbortSignal.timeout(10_000);

  test("a graph without its default assistant is missing; the server's own assistants are what is asked for", async () => {
    answer = { status: 200, body: [{ assistant_id: 'a', graph_id: 'echo', metadata: { created_by: 'system' } }] };
    const listing = await listedGraphs(url, GRAPHS, signal());
    assert.deepEqual(listing, { kind: 'listed', missing: [GRAPHS[1]] });
    assert.deepEqual((requests.at(-1) as { metadata: unknown }).metadata, { created_by: 'system' });

    answer = { status: 200, body: [{ graph_id: 'broken' }, { graph_id: 'echo' }] };
    assert.deepEqual(await listedGraphs(url, GRAPHS, signal()), { kind: 'listed', missing: [] });
  });

  test('a server whose authentication refuses Berth cannot be checked; any other failure fails the check', async () => {
    answer = { status: 403, body: { detail: 'Forbidden' } };
    assert.equal((await listedGraphs(url, GRAPHS, signal())).kind, 'unverifiable');
    answer = { status: 500, body: { detail: 'boom' } };
    assert.deepEqual(await listedGraphs(url, GRAPHS, signal()), { kind: 'failed', why: 'POST /assistants/search answered HTTP 500' });
    answer = { status: 200, body: { not: 'a list' } };
    assert.equal((await listedGraphs(url, GRAPHS, signal())).kind, 'failed');
    assert.equal((await listedGraphs('http://127.0.0.1:1', GRAPHS, signal())).kind, 'failed');
  });

  test('the output blames the graph whose module it names, else the one the loader reports by position', () => {
    assert.deepEqual(blamedGraphs(THROWS_AT_IMPORT, GRAPHS), [GRAPHS[1]]);
    // "graph is nullush" names no module: the loader's position (LANGSERVE_GRAPHS order) does.
    const withNope: ExpectedGraph[] = [GRAPHS[0] as ExpectedGraph, { id: 'nope', spec: './src/graph.ts:nope' }];
    assert.deepEqual(blamedGraphs(MISSING_EXPORT, withNope), [withNope[1]]);
    assert.deepEqual(blamedGraphs(['listening on 0.0.0.0:8000'], GRAPHS), []);
  });

  test('quoted lines unwrap JSON log lines and stay redacted, escaped values included', () => {
    const secret = 'line one "quoted"\nline two';
    const escaped = JSON.stringify({ level: 'error', event: 'agent server: could not start', error: `Error: failed with ${secret}` });
    const redacted = redact(escaped, [secret]);
    assert.ok(!redacted.includes('quoted'), redacted);
    const quoted = quoteLines([...THROWS_AT_IMPORT, redacted], [secret]);
    assert.match(quoted, /^info: Registering graph with id 'echo'$/m);
    assert.match(quoted, /^error: agent server: could not start: Error: broken graph module failed at import: token=\[redacted\]$/m);
    assert.match(quoted, /^error: agent server: could not start: Error: failed with \[redacted\]$/m);
    assert.ok(!quoted.includes('line two'));
    assert.ok(
      quoteLines(
        Array.from({ length: 500 }, (_, i) => `line ${i} ${'x'.repeat(300)}`),
        [],
      ).length <= 2_001,
    );
  });
});
