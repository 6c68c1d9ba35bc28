import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { JobSourceView } from '../contract/build-runners.js';
import type { BuildSource } from '../engine/drivers/types.js';
import type { RunnerClient } from './client.js';

/** A job's source as the build driver takes it, and what to remove once the build is over. */
export interface FetchedSource {
  source: BuildSource;
  release(): Promise<void>;
}

/**
 * Turns the control plane's answer into the driver's source. A repository is fetched by
 * the driver itself; an uploaded archive is downloaded here first, bounded in size, into
 * `archiveDir`. Its content is untrusted: the driver unpacks it with Berth's safe
 * extraction (sources/source-archive.ts), exactly as the control plane would.
 */
export async function fetchSource(client: RunnerClient, jobId: string, answer: JobSourceView, archiveDir: string, signal: AbortSignal): Promise<FetchedSource> {
  if (answer.kind === 'git') {
    return {
      source: gitSource(answer.url, answer.ref, answer.credentials),
      release: async () => {},
    };
  }
  await mkdir(archiveDir, { recursive: true, mode: 0o700 });
  const file = path.join(archiveDir, `${jobId}.tar.gz`);
  await rm(file, { force: true });
  const release = () => rm(file, { force: true });
  try {
    await client.download(answer.url, file, signal);
  } catch (error) {
    await release();
    throw error;
  }
  return { source: { kind: 'archive', path: file }, release };
}

/** The git source a job names, with its short-lived credential in the form the fetch takes. */
export function gitSource(url: string, ref: string, credentials: Extract<JobSourceView, { kind: 'git' }>['credentials']): BuildSource {
  return {
    kind: 'git',
    url,
    ref,
    ...(credentials
      ? {
          auth:
            credentials.kind === 'basic'
              ? { kind: 'basic' as const, username: credentials.username, password: credentials.password }
              : {
                  kind: 'ssh-key' as const,
                  privateKey: credentials.private_key,
                  ...(credentials.known_hosts ? { knownHosts: credentials.known_hosts } : {}),
                },
        }
      : {}),
  };
}
