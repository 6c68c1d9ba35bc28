import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseGitHubPush, pushMatchesRepository, readGitHubDelivery, verifyGitHubSignature, WebhookError } from '../../src/codehost/webhooks.js';

const SECRET = 'It\u2019s a Secret to Everybody';

/** The example from GitHub's "Validating webhook deliveries" page. */
const DOCS_EXAMPLE = {
  secret: "It's a Secret to Everybody",
  payload: 'Hello, World!',
  signature: 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
};

const sign = (body: string | Buffer, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** A push payload as GitHub sends it (abridged to the fields around the ones read). */
function pushPayload(overrides: Record<string, unknown> = {}) {
  return {
    ref: 'refs/heads/main',
    before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
    after: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
    created: false,
    deleted: false,
    forced: false,
    base_ref: null,
    compare: 'https://github.com/acme/agent/compare/6113728f27ae...0d1a26e67d8f',
    commits: [],
    head_commit: { id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c', message: 'Update README.md' },
    repository: {
      id: 186853002,
      node_id: 'MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=',
      name: 'agent',
      full_name: 'acme/agent',
      private: true,
      owner: { login: 'acme', id: 21031067 },
      html_url: 'https://github.com/acme/agent',
      url: 'https://github.com/acme/agent',
      git_url: 'git://github.com/acme/agent.git',
      ssh_url: 'git@github.com:acme/agent.git',
      clone_url: 'https://github.com/acme/agent.git',
      default_branch: 'main',
      // Push events give the repository's times as Unix seconds.
      pushed_at: 1557933657,
    },
    pusher: { name: 'octocat', email: 'octocat@example.com' },
    sender: { login: 'octocat', id: 583231 },
    installation: { id: 2311213, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMjMxMTIxMw==' },
    ...overrides,
  };
}

describe('GitHub webhooks', () => {
  it('accepts the signature from GitHub’s documentation and refuses altered ones', () => {
    assert.equal(verifyGitHubSignature(DOCS_EXAMPLE.secret, DOCS_EXAMPLE.payload, DOCS_EXAMPLE.signature), true);
    assert.equal(verifyGitHubSignature(DOCS_EXAMPLE.secret, 'Hello, World?', DOCS_EXAMPLE.signature), false, 'another body');
    assert.equal(verifyGitHubSignature('another secret', DOCS_EXAMPLE.payload, DOCS_EXAMPLE.signature), false, 'another secret');
    assert.equal(verifyGitHubSignature(DOCS_EXAMPLE.secret, DOCS_EXAMPLE.payload, DOCS_EXAMPLE.signature.replace('sha256=', 'sha1=')), false);
    assert.equal(verifyGitHubSignature(DOCS_EXAMPLE.secret, DOCS_EXAMPLE.payload, `${DOCS_EXAMPLE.signature.slice(0, -2)}ff`), false, 'one byte changed');
    assert.equal(verifyGitHubSignature(DOCS_EXAMPLE.secret, DOCS_EXAMPLE.payload, DOCS_EXAMPLE.signature.slice(0, -2)), false, 'truncated');
    assert.equal(verifyGitHubSignature(DOCS_EXAMPLE.secret, DOCS_EXAMPLE.payload, undefined), false, 'missing');
    assert.equal(
      verifyGitHubSignature(DOCS_EXAMPLE.secret, Buffer.from(DOCS_EXAMPLE.payload), DOCS_EXAMPLE.signature.toUpperCase().replace('SHA256=', 'sha256=')),
      true,
      'hex case and Buffer bodies',
    );
    assert.throws(() => verifyGitHubSignature('', DOCS_EXAMPLE.payload, DOCS_EXAMPLE.signature), /secret is required/);
  });

  it('reads a signed push delivery into what Berth needs', () => {
    const body = JSON.stringify(pushPayload());
    const delivery = readGitHubDelivery({
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
        'x-hub-signature-256': sign(body),
        'content-type': 'application/json',
      },
      rawBody: Buffer.from(body),
      secret: SECRET,
    });
    assert.deepEqual(delivery, {
      event: 'push',
      deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      push: {
        deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
        installationId: 2311213,
        repository: {
          id: 186853002,
          fullName: 'acme/agent',
          cloneUrl: 'https://github.com/acme/agent.git',
          htmlUrl: 'https://github.com/acme/agent',
          sshUrl: 'git@github.com:acme/agent.git',
        },
        ref: 'refs/heads/main',
        branch: 'main',
        tag: null,
        before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
        after: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
        created: false,
        deleted: false,
        forced: false,
        pushedAt: '1557933657',
      },
    });
  });

  it('refuses a delivery whose signature is missing or wrong before reading its body', () => {
    const body = JSON.stringify(pushPayload());
    const headers = { 'x-github-event': 'push', 'x-github-delivery': 'd1' };
    assert.throws(
      () => readGitHubDelivery({ headers, rawBody: body, secret: SECRET }),
      (error: unknown) => error instanceof WebhookError && error.failure === 'signature-missing',
    );
    assert.throws(
      () => readGitHubDelivery({ headers: { ...headers, 'x-hub-signature-256': sign(body, 'guess') }, rawBody: body, secret: SECRET }),
      (error: unknown) => error instanceof WebhookError && error.failure === 'signature-invalid',
    );
    assert.throws(
      () => readGitHubDelivery({ headers: { ...headers, 'x-hub-signature-256': sign('not json') }, rawBody: 'not json', secret: SECRET }),
      (error: unknown) => error instanceof WebhookError && error.failure === 'payload-invalid',
      'a signed body that is not JSON',
    );
  });

  it('reads form-encoded deliveries, pings and other events', () => {
    const json = JSON.stringify(pushPayload({ ref: 'refs/tags/v1.2.0' }));
    const form = `payload=${encodeURIComponent(json)}`;
    const delivery = readGitHubDelivery({
      headers: { 'x-github-event': 'push', 'x-github-delivery': 'd2', 'x-hub-signature-256': sign(form), 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: form,
      secret: SECRET,
    });
    assert.equal(delivery.event, 'push');
    assert.equal(delivery.event === 'push' && delivery.push.branch, null, 'a tag push names no branch');
    assert.equal(delivery.event === 'push' && delivery.push.tag, 'v1.2.0');

    const ping = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
    assert.deepEqual(
      readGitHubDelivery({
        headers: { 'x-github-event': 'ping', 'x-github-delivery': 'd3', 'x-hub-signature-256': sign(ping) },
        rawBody: ping,
        secret: SECRET,
      }),
      {
        event: 'ping',
        deliveryId: 'd3',
      },
    );
    const issue = JSON.stringify({ action: 'opened' });
    assert.deepEqual(
      readGitHubDelivery({
        headers: { 'x-github-event': 'issues', 'x-github-delivery': 'd4', 'x-hub-signature-256': sign(issue) },
        rawBody: issue,
        secret: SECRET,
      }),
      {
        event: 'other',
        deliveryId: 'd4',
        name: 'issues',
      },
    );
  });

  it('parses branch deletion and creation, branches with slashes, and refuses what is not a push', () => {
    const deleted = parseGitHubPush('d5', pushPayload({ ref: 'refs/heads/feature/login', after: '0'.repeat(40), deleted: true, head_commit: null }));
    assert.deepEqual([deleted.branch, deleted.deleted, deleted.after], ['feature/login', true, '0'.repeat(40)]);
    const { created: _c, deleted: _d, forced: _f, installation: _i, ...minimal } = pushPayload({ before: '0'.repeat(40) });
    const created = parseGitHubPush('d6', minimal);
    assert.deepEqual([created.created, created.deleted, created.forced, created.installationId], [true, false, false, null]);
    assert.throws(
      () => parseGitHubPush('d7', { zen: 'ping' }),
      (error: unknown) => error instanceof WebhookError && error.failure === 'payload-invalid',
    );
    assert.throws(() => parseGitHubPush('d8', pushPayload({ repository: { id: 'x' } })), WebhookError);
  });

  it('matches a push to stored repository URLs in any of their forms', () => {
    const push = parseGitHubPush('d9', pushPayload());
    for (const stored of [
      'https://github.com/acme/agent',
      'https://github.com/Acme/Agent.git/',
      'git@github.com:acme/agent.git',
      'http://github.com/acme/agent',
    ]) {
      assert.ok(pushMatchesRepository(push, stored), stored);
    }
    for (const stored of ['https://github.com/acme/agent-2', 'https://ghe.example.com/acme/agent', 'https://github.com/other/agent']) {
      assert.ok(!pushMatchesRepository(push, stored), stored);
    }
  });
});
