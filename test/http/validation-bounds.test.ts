import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Client, client } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

const deployment = (resourceSpec: unknown) => ({
  name: `bounds-${Math.random().toString(36).slice(2, 10)}`,
  source: 'external_docker',
  source_config: { resource_spec: resourceSpec },
  source_revision_config: { image_uri: 'localhost/berth-test-agent:v1' },
  secrets: [],
});

/** A 422 answer stays small whatever the request: few issues, bounded echoes. */
const SMALL_ANSWER = 50_000;

describe('validation answers are bounded', () => {
  let server: TestServer;
  let api: Client;
  before(async () => {
    server = await startTestServer('sqlite', { engine: false });
    api = client(server.url, { key: server.adminKey });
  });
  after(async () => server.close());

  test('a ~1 MB body of 480,000 wrong items answers a small 422, and /ok answers while 8 such requests run', async () => {
    const body = JSON.stringify(deployment({ volumes: Array(480_000).fill(0) }));
    assert.ok(body.length > 950_000 && body.length < 1_048_576, `body of ${body.length} bytes`);
    const floods = Array.from({ length: 8 }, () => api('POST', '/v2/deployments', { rawBody: body }));
    const health = client(server.url)('GET', '/ok');
    const answers = await Promise.all(floods);
    assert.equal((await health).status, 200);
    for (const answer of answers) {
      assert.equal(answer.status, 422);
      assert.ok(answer.text.length < SMALL_ANSWER, `a 422 of ${answer.text.length} characters`);
      assert.ok(answer.body.detail.length >= 1 && answer.body.detail.length <= 10);
      assert.deepEqual(answer.body.detail[0].loc, ['body', 'source_config', 'resource_spec', 'volumes']);
      assert.equal(answer.body.detail[0].type, 'too_long');
    }
    assert.equal((await api('GET', '/v2/deployments')).body.resources.length, 0, 'nothing was created');
  });

  test('free-form lists and maps of resource_spec have a maximum size', async () => {
    const cases: [string, unknown, string][] = [
      ['volumes', Array.from({ length: 101 }, () => ({})), 'List should have at most 100 items after validation, not 101'],
      ['volume_mounts', Array.from({ length: 101 }, () => ({})), 'List should have at most 100 items after validation, not 101'],
      ['init_containers', Array.from({ length: 21 }, () => ({})), 'List should have at most 20 items after validation, not 21'],
      ['sidecars', Array.from({ length: 21 }, () => ({})), 'List should have at most 20 items after validation, not 21'],
      ['image_pull_secrets', Array.from({ length: 21 }, (_, i) => ({ name: `s${i}` })), 'List should have at most 20 items after validation, not 21'],
      [
        'labels',
        Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`l${i}`, 'v'])),
        'Dictionary should have at most 256 items after validation, not 257',
      ],
      [
        'annotations',
        Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`a${i}`, 'v'])),
        'Dictionary should have at most 256 items after validation, not 257',
      ],
    ];
    for (const [field, value, msg] of cases) {
      const res = await api('POST', '/v2/deployments', { body: deployment({ [field]: value }) });
      assert.equal(res.status, 422, `${field}: ${res.text.slice(0, 200)}`);
      const issue = res.body.detail.find((d: { loc: unknown[] }) => d.loc.at(-1) === field);
      assert.ok(issue, `${field}: ${res.text.slice(0, 300)}`);
      assert.equal(issue.type, 'too_long');
      assert.equal(issue.msg, msg);
    }
    const atLimit = await api('POST', '/v2/deployments', { body: deployment({ volumes: Array.from({ length: 100 }, () => ({})) }) });
    assert.equal(atLimit.status, 201, atLimit.text.slice(0, 200));
  });

  test('any list or map in a body is refused past 1,000 entries before it is validated item by item', async () => {
    const labels = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`label-${i}`, 'x']));
    const res = await api('POST', '/v2/deployments', { body: deployment({ labels }) });
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.detail, [
      {
        type: 'too_long',
        loc: ['body', 'source_config', 'resource_spec', 'labels'],
        msg: 'Dictionary should have at most 1000 items after validation, not 20000',
        input: '{…}',
        ctx: { field_type: 'Dictionary', max_length: 1000, actual_length: 20000 },
      },
    ]);
    const tracked = await api('PATCH', `/v2/deployments/${crypto.randomUUID()}`, { body: { tracked_packages: Array(5000).fill(7) } });
    assert.equal(tracked.status, 422);
    assert.equal(tracked.body.detail[0].type, 'too_long');
  });

  test('at most 10 issues, each echoing a bounded part of its input', async () => {
    // 200 wrong-typed packages are 200 issues; the answer shows the first 10.
    const many = await api('POST', `/v2/deployments/${crypto.randomUUID()}/revisions`, { body: { tracked_packages: Array(200).fill(7) } });
    assert.equal(many.status, 422);
    assert.equal(many.body.detail.length, 10);
    assert.deepEqual(many.body.detail[9].loc, ['body', 'tracked_packages', 9]);

    const long = 'x'.repeat(70_000);
    const longName = await api('POST', '/v1/workspaces', { body: { name: long } });
    assert.equal(longName.status, 422);
    assert.equal(longName.body.detail[0].type, 'string_too_long');
    assert.ok(longName.body.detail[0].input.length <= 201, 'a long input is cut in the echo');
    assert.ok(longName.text.length < 1000);

    // A missing field echoes the whole body, cut to a bounded size.
    const missing = await api('POST', '/v2/deployments', {
      body: { source: 'external_docker', source_config: { resource_spec: { volumes: Array.from({ length: 100 }, () => ({ name: long.slice(0, 5000) })) } } },
    });
    assert.equal(missing.status, 422);
    assert.ok(missing.text.length < 10_000, `${missing.text.length} characters`);
    assert.equal(missing.body.detail[0].type, 'missing');

    // A key of a free-form map as long as the body is cut in `loc`.
    const longKey = await api('POST', '/v2/deployments', { body: deployment({ labels: { [long]: 5 } }) });
    assert.equal(longKey.status, 422);
    assert.ok(longKey.text.length < 1000, `${longKey.text.length} characters`);
    assert.equal(longKey.body.detail[0].loc.length, 5);
  });
});
