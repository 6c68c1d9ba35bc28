import assert from 'node:assert/strict';
import { CodehostError } from '../../src/codehost/index.js';
import type { Client } from './http.js';
import { createRepository, type FixtureRepository, tempDir } from './git-repos.js';

export interface GitIntegrationFixture {
  integrationId: string;
  /** The repository's URL as the integration lists it: what `source_config.repo_url` takes. */
  repoUrl: string;
  defaultBranch: string;
  repository: FixtureRepository;
  remove(): Promise<void>;
}

/**
 * A real repository on this machine (default branch `main`), registered through the API
 * as a `git` integration of the caller's workspace: code-host deployments must name an
 * integration of theirs and one of its repositories.
 */
export async function gitIntegration(api: Client, files: Record<string, string> = {}): Promise<GitIntegrationFixture> {
  const dir = await tempDir('berth-integration-');
  const repository = await createRepository(dir.path, { owner: 'acme', name: 'agent', defaultBranch: 'main' });
  if (Object.keys(files).length > 0) await repository.commit('main', files, 'project files');
  const registered = await gitIntegrationOf(api, repository.bare);
  return { integrationId: registered.id, repoUrl: registered.repoUrl, defaultBranch: registered.defaultBranch, repository, remove: dir.remove };
}

/** Registers an existing repository as a `git` integration; answers its id and the URL it lists. */
export async function gitIntegrationOf(api: Client, repository: string): Promise<{ id: string; repoUrl: string; defaultBranch: string }> {
  const created = await api('POST', '/v1/integrations/codehost', {
    body: { provider: 'git', name: 'local repositories', git: { repositories: [repository] } },
  });
  assert.equal(created.status, 201, created.text);
  const repos = await api('GET', `/v1/integrations/codehost/${created.body.id}/repos`);
  assert.equal(repos.status, 200, repos.text);
  const [listed] = repos.body as { url: string; default_branch: string }[];
  assert.ok(listed, 'the integration lists its repository');
  return { id: created.body.id, repoUrl: listed.url, defaultBranch: listed.default_branch };
}

/** For assert.rejects: a CodehostError of this kind whose message holds none of the given texts (credentials). */
export const failsWith =
  (failure: CodehostError['failure'], ...mustNotContain: string[]) =>
  (error: unknown) => {
    assert.ok(error instanceof CodehostError, `expected a CodehostError, got ${String(error)}`);
    assert.equal(error.failure, failure, error.message);
    for (const text of mustNotContain) assert.ok(!error.message.includes(text), `the message leaks ${text}: ${error.message}`);
    return true;
  };
