import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type GitIntegrationFixture, gitIntegration } from '../support/codehost.js';
import { type ApiResponse, type Client, client } from '../support/http.js';
import { describeOnEachDatabase, otherTenants } from '../support/suite.js';

// Refs git would read as an option or a revision expression, or that name no branch or tag.
const BAD_REFS = [
  '--upload-pack=touch /tmp/berth-pwned',
  '-c',
  'main..other',
  'main~1',
  'main^',
  'HEAD@{1}',
  '@',
  'a b',
  'feature/',
  'a//b',
  'x.lock',
  'x.lock/y',
  '.hidden',
  'a/.b',
  'a:b',
  'a\\b',
  'HEAD',
  'refs/pull/1/head',
];
// Paths that leave the checkout, are absolute in some form, or name no file.
const BAD_PATHS = [
  '../langgraph.json',
  'agent/../../x.json',
  '..',
  '/etc/passwd',
  'C:/x/langgraph.json',
  'agent\\langgraph.json',
  'agent/',
  'file:///etc/passwd',
  'a\nb',
];
// Transports other than https, http, ssh, git and local paths, and option-like URLs.
const BAD_URLS = [
  'fd::3',
  'fd::0,1/acme/agent',
  'ext::sh%20-c%20touch%20/tmp/berth-pwned',
  'https::example.com/acme/agent',
  'fd::https://alice:hunter2@example.com/acme/agent',
  '--upload-pack=touch /tmp/berth-pwned',
  'ssh://-oProxyCommand=touch%20x/acme/agent',
];

describeOnEachDatabase('sources refused at the door', (ctx) => {
  let fixture: GitIntegrationFixture;

  before(async () => {
    fixture = await gitIntegration(ctx().api);
  });
  after(async () => {
    await fixture?.remove();
  });

  const refused = (res: ApiResponse, loc: (string | number)[], what: string) => {
    assert.equal(res.status, 422, `${what}: ${res.text}`);
    assert.equal(res.body.code, 'validation_error', what);
    const issue = (res.body.detail as { loc: unknown; type: string; msg: string }[]).find((item) => JSON.stringify(item.loc) === JSON.stringify(loc));
    assert.ok(issue, `${what}: no issue at ${JSON.stringify(loc)} in ${res.text}`);
    assert.equal(issue.type, 'value_error', what);
    assert.match(issue.msg, /^Value error, /, what);
  };

  const create = (api: Client, config: { repo_url?: string }, revision: Record<string, string>) =>
    api('POST', '/v2/deployments', {
      body: {
        name: `src-${randomUUID().slice(0, 8)}`,
        source: 'codehost',
        source_config: { integration_id: fixture.integrationId, repo_url: fixture.repoUrl, ...config },
        source_revision_config: revision,
        secrets: [],
      },
    });

  const deployment = async () => {
    const res = await create(ctx().api, {}, { repo_ref: 'main' });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  };
  const revisionsOf = async (id: string) => (await ctx().api('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources as unknown[];

  test('repo_ref values git would misread, or that name no branch, tag or commit, are 422 at create, PATCH and new revisions', async () => {
    const { api } = ctx();
    const id = await deployment();
    for (const ref of BAD_REFS) {
      const loc = ['body', 'source_revision_config', 'repo_ref'];
      refused(await create(api, {}, { repo_ref: ref }), loc, `create ${ref}`);
      refused(await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { repo_ref: ref } } }), loc, `PATCH ${ref}`);
      refused(await api('POST', `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { repo_ref: ref } } }), loc, `revision ${ref}`);
    }
    assert.equal((await revisionsOf(id)).length, 1, 'nothing refused made a revision');
    assert.equal((await api('GET', `/v2/deployments/${id}`)).body.source_revision_config.repo_ref, 'main');

    for (const ref of ['refs/heads/main', 'refs/tags/v1.0', 'v1.0', fixture.repository.commits.head]) {
      const res = await create(api, {}, { repo_ref: ref });
      assert.equal(res.status, 201, `${ref}: ${res.text}`);
      assert.equal(res.body.source_revision_config.repo_ref, ref);
    }
  });

  test('config paths that leave the checkout or name no file are 422 under both names, at create, PATCH and new revisions', async () => {
    const { api } = ctx();
    const id = await deployment();
    for (const field of ['graph_config_path', 'langgraph_config_path']) {
      const loc = ['body', 'source_revision_config', field];
      for (const bad of BAD_PATHS) {
        refused(await create(api, {}, { repo_ref: 'main', [field]: bad }), loc, `create ${field}=${bad}`);
        refused(await api('PATCH', `/v2/deployments/${id}`, { body: { source_revision_config: { [field]: bad } } }), loc, `PATCH ${field}=${bad}`);
        refused(await api('POST', `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { [field]: bad } } }), loc, `revision ${field}=${bad}`);
      }
    }
    // The LangGraph CLI's remote build names the file inside its archive the same way.
    const upload = await api('POST', '/v2/deployments', {
      body: {
        name: `src-${randomUUID().slice(0, 8)}`,
        source: 'internal_source',
        source_config: {},
        source_revision_config: { langgraph_config_path: '../x.json' },
        secrets: [],
      },
    });
    refused(upload, ['body', 'source_revision_config', 'langgraph_config_path'], 'internal_source create');
    assert.equal((await revisionsOf(id)).length, 1, 'nothing refused made a revision');

    const good = await create(api, {}, { repo_ref: 'main', langgraph_config_path: './agent/langgraph.json' });
    assert.equal(good.status, 201, good.text);
    assert.equal(good.body.source_revision_config.graph_config_path, './agent/langgraph.json');
  });

  test('repository URLs with another transport are 422 at integration create and at deployment create and PATCH, never echoed', async () => {
    const { api } = ctx();
    const id = await deployment();
    const integrationsBefore = ((await api('GET', '/v1/integrations/codehost/install')).body as unknown[]).length;
    for (const url of BAD_URLS) {
      const integration = await api('POST', '/v1/integrations/codehost', {
        body: { provider: 'git', name: 'bad transport', git: { repositories: [fixture.repository.bare, url] } },
      });
      refused(integration, ['body', 'git', 'repositories', 1], `integration ${url}`);
      const created = await create(api, { repo_url: url }, { repo_ref: 'main' });
      refused(created, ['body', 'source_config', 'repo_url'], `create ${url}`);
      // repo_url cannot change anyway, but such a value is a 422 before that rule's 400.
      const patched = await api('PATCH', `/v2/deployments/${id}`, { body: { source_config: { repo_url: url } } });
      refused(patched, ['body', 'source_config', 'repo_url'], `PATCH ${url}`);
      for (const res of [integration, created, patched]) assert.ok(!res.text.includes('hunter2'), `a password in the URL is never echoed: ${res.text}`);
    }
    assert.equal(((await api('GET', '/v1/integrations/codehost/install')).body as unknown[]).length, integrationsBefore, 'no integration was stored');
    assert.equal((await revisionsOf(id)).length, 1);
  });

  test('a member of another workspace gets none of it through, on their own resources or on ours', async () => {
    const { api, server } = ctx();
    const id = await deployment();
    const { otherWorkspaceKey, otherOrganizationKey } = await otherTenants(ctx());
    const other = client(server.url, { key: otherWorkspaceKey });
    // Integrations take an admin key: the other organization's admin tries that part.
    const otherAdmin = client(server.url, { key: otherOrganizationKey });

    // On our deployment: refused (before or after finding that it is not theirs), and it is unchanged.
    for (const body of [{ source_revision_config: { repo_ref: '--upload-pack=touch /tmp/berth-pwned' } }, { source_config: { repo_url: 'fd::3' } }]) {
      const res = await other('PATCH', `/v2/deployments/${id}`, { body });
      assert.ok(res.status === 422 || res.status === 404, res.text);
    }
    const revision = await other('POST', `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { graph_config_path: '../../x' } } });
    assert.ok(revision.status === 422 || revision.status === 404, revision.text);
    assert.equal((await revisionsOf(id)).length, 1);
    assert.equal((await api('GET', `/v2/deployments/${id}`)).body.source_revision_config.repo_ref, 'main');

    // Against our integration, and with an integration of their own.
    refused(await create(other, { repo_url: 'fd::3' }, { repo_ref: 'main' }), ['body', 'source_config', 'repo_url'], 'other workspace, our integration');
    const theirs = await otherAdmin('POST', '/v1/integrations/codehost', {
      body: { provider: 'git', name: 'theirs', git: { repositories: ['ext::sh%20-c%20id'] } },
    });
    refused(theirs, ['body', 'git', 'repositories', 0], 'other workspace integration');
    refused(await create(other, {}, { repo_ref: 'main~1' }), ['body', 'source_revision_config', 'repo_ref'], 'other workspace, bad ref');
  });
});
