/**
 * The sample project the image benches build: the echo agent of the test fixtures, in a git
 * repository of its own behind `git http-backend`, with the base images built first.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_TEST_BASE_IMAGE } from '../test/support/base-image.js';
import { createRepository, git, type FixtureRepository } from '../test/support/git-repos.js';
import { startGitHttpServer } from '../test/support/git-http-server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = path.join(ROOT, 'test/fixtures/agents/echo-agent');

/** Builds Berth's local base images once (instant when they are there) with the containers' settings. */
export function baseImages(env: NodeJS.ProcessEnv): void {
  execFileSync('bash', BUILD_TEST_BASE_IMAGE, { env, stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * The echo agent pushed to `main` of a new repository below `root`, served over HTTP. Its package
 * name is one no earlier build used, so a cold build cannot take its install layer from the cache.
 */
export async function sampleProjectRepository(root: string) {
  const repo = await createRepository(root, { owner: 'acme', name: 'echo-agent', defaultBranch: 'main' });
  await cp(FIXTURE, repo.work, { recursive: true });
  const manifest = JSON.parse(await readFile(path.join(repo.work, 'package.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(path.join(repo.work, 'package.json'), `${JSON.stringify({ ...manifest, name: `echo-agent-${randomUUID().slice(0, 8)}` }, null, 2)}\n`);
  await git(repo.work, ['add', '.']);
  await git(repo.work, ['commit', '--quiet', '-m', 'the echo agent']);
  await git(repo.work, ['push', '--quiet', 'origin', 'main']);
  const http = await startGitHttpServer({ root });
  return { repo: repo as FixtureRepository, http };
}

/** The environment podman and buildah run with here: Berth's containers.conf unless one is set. */
export function containersEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? '/etc/berth/containers.conf',
    CONTAINERS_REGISTRIES_CONF: process.env.CONTAINERS_REGISTRIES_CONF ?? '/etc/berth/registries.conf',
  };
}

/** A log line as the logs routes answer it, with what the benches read of it. */
export interface LogLine {
  message: string;
  timestamp: number;
}

/** Milliseconds from the first log line `from` matches to the last one `to` matches; 0 when either is missing. */
export function between(lines: LogLine[], from: (m: string) => boolean, to: (m: string) => boolean): number {
  const start = lines.find((l) => from(l.message));
  const end = [...lines].reverse().find((l) => to(l.message));
  return start && end ? end.timestamp - start.timestamp : 0;
}
