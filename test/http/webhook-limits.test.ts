import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type Client, client, rawRequest } from '../support/http.js';
import { eventually } from '../support/runtimes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { otherTenants } from '../support/suite.js';
import { describeEachDatabase } from '../support/database.js';

const BODY_LIMIT = 64 * 1024;
const CONCURRENT_BODIES = 4;

const sign = (secret: string, body: Buffer) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const JUNK_SIGNATURE = `sha256=${'0'.repeat(64)}`;

describeEachDatabase('webhook bodies are bounded', (kind) => {
  let server: TestServer;
  let api: Client;
  let port: number;
  const secret = `hook-${randomUUID()}`;
  let ours: string;
  /** An integration of another workspace, whose admin floods its webhook URL. */
  let theirs: string;
  const hook = (id: string) => `/v1/integrations/codehost/${id}/webhook`;

  const githubIntegration = async (caller: Client, webhookSecret: string | undefined) => {
    const created = await caller('POST', '/v1/integrations/codehost', {
      body: {
        provider: 'github',
        name: `gh-${randomUUID().slice(0, 8)}`,
        github: { app_id: 1, installation_id: 2, private_key: 'not used by webhooks', ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) },
      },
    });
    assert.equal(created.status, 201, created.text);
    return created.body.id as string;
  };

  before(async () => {
    server = await startTestServer(kind, { engine: false, limits: { webhookBodyLimitBytes: BODY_LIMIT, webhookConcurrentBodies: CONCURRENT_BODIES } });
    api = client(server.url, { key: server.adminKey });
    port = Number(new URL(server.url).port);
    ours = await githubIntegration(api, secret);
    const { otherWorkspaceId } = await otherTenants({ server, api, anonymous: client(server.url) });
    const key = await api('POST', '/v1/api-keys', { body: { name: 'other-admin', workspace_id: otherWorkspaceId, role: 'admin' } });
    theirs = await githubIntegration(client(server.url, { key: key.body.key }), 'their secret');
  });
  after(async () => server?.close());

  test('refusals that need no body come before it is read, and close the connection', async () => {
    const withoutSecret = await githubIntegration(api, undefined);
    const cases: [string, Record<string, string | number>, number, string][] = [
      [hook(ours), {}, 401, 'webhook_signature_invalid'],
      [hook(ours), { 'X-Hub-Signature-256': 'sha1=abc' }, 401, 'webhook_signature_invalid'],
      [hook(randomUUID()), { 'X-Hub-Signature-256': JUNK_SIGNATURE }, 404, 'integration_not_found'],
      [hook(withoutSecret), { 'X-Hub-Signature-256': JUNK_SIGNATURE }, 400, 'webhook_not_accepted'],
      ['/v1/integrations/codehost/not-a-uuid/webhook', { 'X-Hub-Signature-256': JUNK_SIGNATURE }, 422, 'validation_error'],
      [hook(ours), { 'X-Hub-Signature-256': JUNK_SIGNATURE, 'Content-Length-Override': 1 }, 413, 'body_too_large'],
    ];
    for (const [path, headers, status, code] of cases) {
      // A megabyte announced, not a byte of it sent: an answer can only come from the headers.
      const length = 'Content-Length-Override' in headers ? BODY_LIMIT + 1 : 1_000_000;
      const { 'Content-Length-Override': _, ...rest } = headers;
      const exchange = rawRequest(port, 'POST', path, { 'Content-Type': 'application/json', 'X-GitHub-Event': 'push', 'Content-Length': length, ...rest });
      const answer = await exchange.response;
      assert.equal(answer.status, status, `${path} ${JSON.stringify(headers)}: ${answer.text}`);
      assert.match(answer.text, new RegExp(`"code":"${code}"`));
    }
  });

  test('a body past the cap without a declared length is cut off with 413', async () => {
    const exchange = rawRequest(port, 'POST', hook(ours), {
      'Content-Type': 'application/json',
      'X-Hub-Signature-256': JUNK_SIGNATURE,
      'Transfer-Encoding': 'chunked',
    });
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    // Keep sending until the server answers; it must not read the whole of it.
    let sent = 0;
    while (!exchange.answered() && sent < 100 * BODY_LIMIT && !exchange.socket.destroyed) {
      await new Promise<void>((resolve) => exchange.socket.write(frame, () => resolve()));
      sent += chunk.length;
    }
    const answer = await exchange.response;
    assert.equal(answer.status, 413, answer.text);
    assert.ok(sent < 100 * BODY_LIMIT, `${sent} bytes were taken`);
  });

  test('a flood of junk bodies: at most half the slots for its workspace, the rest answered 503 at once; our delivery still gets through', async () => {
    const junkLength = BODY_LIMIT - 1;
    const flood = Array.from({ length: 80 }, () =>
      rawRequest(
        port,
        'POST',
        hook(theirs),
        { 'Content-Type': 'application/json', 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': JUNK_SIGNATURE, 'Content-Length': junkLength },
        Buffer.alloc(1024, 'j'),
      ),
    );
    try {
      // Refused ones are answered without their body; the admitted ones wait for theirs.
      await eventually(async () => flood.filter((exchange) => exchange.answered()).length >= 80 - CONCURRENT_BODIES / 2, 'the excess to be refused');
      const waiting = flood.filter((exchange) => !exchange.answered());
      assert.equal(waiting.length, CONCURRENT_BODIES / 2, 'bodies being read at once for one workspace');
      for (const exchange of flood.filter((e) => e.answered())) {
        const answer = await exchange.response;
        assert.equal(answer.status, 503, answer.text);
        assert.match(answer.text, /"code":"webhooks_busy"/);
        assert.match(answer.text, /\r\nretry-after: 5\r\n/i);
      }

      // Our workspace's share is untouched: a signed delivery is read, verified over its exact bytes, and answered.
      const body = Buffer.from('{ "zen" : "Keep it logically awesome.",\n  "hook_id": 1, "note": "\u00e9\u00e8" }  ');
      const ping = rawRequest(
        port,
        'POST',
        hook(ours),
        { 'Content-Type': 'application/json', 'X-GitHub-Event': 'ping', 'X-Hub-Signature-256': sign(secret, body), 'Content-Length': body.length },
        body,
      );
      const answer = await ping.response;
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.text, /"outcome":"ignored"/);

      // The admitted junk, once sent whole, fails its signature; its slots are given back.
      for (const exchange of waiting) exchange.socket.write(Buffer.alloc(junkLength - 1024, 'j'));
      for (const exchange of waiting) {
        const refused = await exchange.response;
        assert.equal(refused.status, 401, refused.text);
      }
    } finally {
      for (const exchange of flood) exchange.socket.destroy();
    }
    // A sender that goes away mid-body gives its slot back too.
    const gone = rawRequest(port, 'POST', hook(theirs), { 'X-Hub-Signature-256': JUNK_SIGNATURE, 'Content-Length': 1000 }, Buffer.alloc(10));
    await new Promise((resolve) => setTimeout(resolve, 200));
    gone.socket.destroy();
    await eventually(async () => {
      const next = [0, 1].map(() => rawRequest(port, 'POST', hook(theirs), { 'X-Hub-Signature-256': JUNK_SIGNATURE, 'Content-Length': 2 }, Buffer.from('{}')));
      const statuses = (await Promise.all(next.map((e) => e.response))).map((r) => r.status);
      return statuses.every((status) => status === 401);
    }, 'the slots to be free again');
  });
});
