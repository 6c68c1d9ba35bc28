/**
 * The FastAPI peer's process (bench/peer/fastapi_peer.py): which Python can run it, and the peer
 * started on a seeded SQLite file of its own, stopped and removed afterwards. bench/run.ts drives
 * the get, list and create loads against it as against Berth (issue 24: every phase at least
 * 5× the peer's rate in the same run).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopChild } from './children.js';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'peer', 'fastapi_peer.py');
export const PEER_MISSING = 'not installed; run scripts/setup-bench-peer.sh';

/**
 * The first Python that imports FastAPI and uvicorn: `python3` on the PATH, else Debian's own,
 * where apt puts python3-fastapi (a pyenv or virtualenv `python3` does not see it).
 */
export function peerPython(): string | undefined {
  for (const candidate of ['python3', '/usr/bin/python3']) {
    try {
      execFileSync(candidate, ['-c', 'import fastapi, uvicorn'], { stdio: 'ignore', timeout: 30_000 });
      return candidate;
    } catch {
      // Absent, or without FastAPI and uvicorn.
    }
  }
  return undefined;
}

export interface Peer {
  url: string;
  pid: number;
  apiKey: string;
  /** Seeded deployment ids spread over the whole set (as bench/seed.ts's sample). */
  sampleIds: string[];
  /** What ran: the versions, the event loop (uvloop or asyncio) and the HTTP parser (h11 or httptools) uvicorn chose. */
  describe: string;
  stop(): Promise<void>;
}

interface Announcement {
  port: number;
  sample_ids: string[];
  versions: Record<string, string>;
  loop: string;
  http: string;
}

/** Starts the peer with `deployments` seeded; `register` gets its stop, for the bench's clean-up on Ctrl-C. */
export async function startPeer(python: string, deployments: number, register: (cleanup: () => Promise<void>) => void): Promise<Peer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-peer-'));
  const apiKey = `peer_${randomBytes(16).toString('hex')}`;
  const args = [SCRIPT, '--port', '0', '--db', path.join(dir, 'peer.sqlite'), '--api-key', apiKey, '--seed', String(deployments)];
  const child = spawn(python, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = async () => {
    await stopChild(child, 10_000);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  register(stop);
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the FastAPI peer did not listen within 180 s:\n${errors}`)), 180_000);
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const end = out.indexOf('\n');
        if (end >= 0) {
          clearTimeout(timer);
          resolve(out.slice(0, end));
        }
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the FastAPI peer exited (${signal ?? code}) before listening:\n${errors}`));
      });
    });
    const announced = JSON.parse(line) as Announcement;
    const v = announced.versions;
    return {
      url: `http://127.0.0.1:${announced.port}`,
      pid: child.pid as number,
      apiKey,
      sampleIds: announced.sample_ids,
      describe: `Python ${v.python}, FastAPI ${v.fastapi}, pydantic ${v.pydantic}, uvicorn ${v.uvicorn} (${announced.loop}, ${announced.http})`,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
