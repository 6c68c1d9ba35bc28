import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { UploadError, type UploadFailure, UploadStore } from '../../src/sources/uploads.js';
import { TokenSigner } from '../../src/security/signed-tokens.js';
import { newFileSink } from '../../src/sources/new-file.js';

const key = randomBytes(32);
const dirs: string[] = [];

function store(options: { dir?: string; maxBytes?: number; clock?: () => number } = {}) {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'berth-uploads-'));
  dirs.push(dir);
  return { dir, uploads: new UploadStore({ dir, signer: new TokenSigner(key), maxBytes: options.maxBytes, clock: options.clock }) };
}

async function failure(promise: Promise<unknown>): Promise<{ kind: UploadFailure; message: string }> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof UploadError, `expected an UploadError, got ${String(error)}`);
    return { kind: error.kind, message: error.message };
  }
  assert.fail('the upload was accepted');
}

/** Everything left under the store's directory, relative to it. */
function leftovers(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => fs.statSync(path.join(dir, name)).isFile());
}

const archive = gzipSync(Buffer.from('pretend this is a tar file '.repeat(1000)));

after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('upload store', () => {
  const deployment = randomUUID();

  it('receives an archive and resolves its object path to the same bytes', async () => {
    const { uploads } = store();
    const { token, objectPath, expiresAt } = uploads.issue(deployment);
    assert.match(objectPath, new RegExp(`^uploads/${deployment}/[0-9a-f-]{36}\\.tar\\.gz$`));
    assert.ok(expiresAt.getTime() > Date.now() + 14 * 60_000 && expiresAt.getTime() <= Date.now() + 15 * 60_000);
    const received = await uploads.receive(token, deployment, Readable.from([archive.subarray(0, 1), archive.subarray(1)]), {
      contentLength: archive.length,
    });
    assert.deepEqual(received, { objectPath, bytes: archive.length });
    const file = await uploads.resolve(deployment, objectPath);
    assert.ok(file);
    assert.deepEqual(fs.readFileSync(file), archive);
  });

  it('refuses a second upload with the same token, also after a restart', async () => {
    const { dir, uploads } = store();
    const { token } = uploads.issue(deployment);
    await uploads.receive(token, deployment, Readable.from([archive]));
    const again = await failure(uploads.receive(token, deployment, Readable.from([archive])));
    assert.deepEqual(again, { kind: 'forbidden', message: 'This upload URL has already been used. Request a new one.' });
    const restarted = store({ dir }).uploads;
    assert.equal((await failure(restarted.receive(token, deployment, Readable.from([archive])))).kind, 'forbidden');
  });

  it('refuses an expired token, a token of another deployment and a forged one', async () => {
    let now = Date.now();
    const { uploads } = store({ clock: () => now });
    const issued = uploads.issue(deployment);
    const other = await failure(uploads.receive(issued.token, randomUUID(), Readable.from([archive])));
    assert.deepEqual(other, { kind: 'forbidden', message: 'This upload URL was issued for another deployment.' });
    const forged = await failure(uploads.receive(`${issued.token.slice(0, -2)}AA`, deployment, Readable.from([archive])));
    assert.equal(forged.kind, 'forbidden');
    now += 15 * 60_000;
    const expired = await failure(uploads.receive(issued.token, deployment, Readable.from([archive])));
    assert.deepEqual(expired, { kind: 'forbidden', message: 'This upload URL has expired. Request a new one.' });
    assert.equal(await uploads.resolve(deployment, issued.objectPath), null);
  });

  it('refuses a declared Content-Length over the limit without reading the body', async () => {
    const { uploads } = store({ maxBytes: 1000 });
    const { token } = uploads.issue(deployment);
    let read = false;
    const body = new Readable({
      read() {
        read = true;
        this.push(null);
      },
    });
    const refused = await failure(uploads.receive(token, deployment, body, { contentLength: 1001 }));
    assert.equal(refused.kind, 'too_large');
    assert.equal(read, false);
  });

  it('cuts off a body without Content-Length once it passes the limit, and keeps nothing', async () => {
    const { dir, uploads } = store({ maxBytes: 64 * 1024 });
    const { token, objectPath } = uploads.issue(deployment);
    let sent = 0;
    const endless = new Readable({
      read() {
        const chunk = sent === 0 ? Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(16 * 1024 - 2)]) : Buffer.alloc(16 * 1024);
        sent += chunk.length;
        this.push(chunk);
      },
    });
    assert.equal((await failure(uploads.receive(token, deployment, endless))).kind, 'too_large');
    assert.ok(sent < 64 * 1024 + 64 * 1024, `read ${sent} bytes of an endless body`);
    assert.deepEqual(leftovers(dir), []);
    // The failed upload did not spend the URL: the client may send a smaller archive with it.
    await uploads.receive(token, deployment, Readable.from([archive.subarray(0, 100)]));
    assert.ok(await uploads.resolve(deployment, objectPath));
  });

  it('accepts a body of exactly the limit', async () => {
    const exact = Buffer.concat([Buffer.from([0x1f, 0x8b]), randomBytes(4094)]);
    const { uploads } = store({ maxBytes: exact.length });
    const { token } = uploads.issue(deployment);
    assert.equal((await uploads.receive(token, deployment, Readable.from([exact]), { contentLength: exact.length })).bytes, exact.length);
  });

  it('refuses a body that is not gzip, and an empty one', async () => {
    const { dir, uploads } = store();
    for (const body of [Buffer.from('PK\u0003\u0004 a zip file'), Buffer.alloc(0), Buffer.from([0x1f])]) {
      const { token } = uploads.issue(deployment);
      const refused = await failure(uploads.receive(token, deployment, Readable.from([body])));
      assert.deepEqual(refused, { kind: 'not_gzip', message: 'The upload is not a gzip-compressed archive (.tar.gz).' });
    }
    assert.deepEqual(leftovers(dir), []);
  });

  it('refuses a body shorter than its Content-Length', async () => {
    const { uploads } = store();
    const { token, objectPath } = uploads.issue(deployment);
    const refused = await failure(uploads.receive(token, deployment, Readable.from([archive]), { contentLength: archive.length + 10 }));
    assert.equal(refused.kind, 'incomplete');
    assert.equal(await uploads.resolve(deployment, objectPath), null);
  });

  it('resolves only object paths issued for that deployment and uploaded', async () => {
    const { uploads } = store();
    const other = randomUUID();
    const uploaded = uploads.issue(deployment);
    await uploads.receive(uploaded.token, deployment, Readable.from([archive]));
    const notUploaded = uploads.issue(deployment);
    assert.ok(await uploads.resolve(deployment, uploaded.objectPath));
    assert.equal(await uploads.resolve(other, uploaded.objectPath), null);
    assert.equal(await uploads.resolve(deployment, notUploaded.objectPath), null);
    for (const made_up of [
      `uploads/${deployment}/../../../etc/passwd`,
      '/etc/passwd',
      `uploads/${deployment}/${randomUUID()}.tar.gz`,
      uploaded.objectPath.replace('.tar.gz', '.claim'),
      `gs://bucket/${uploaded.objectPath}`,
    ]) {
      assert.equal(await uploads.resolve(deployment, made_up), null, made_up);
    }
  });

  it('discard removes an archive; discardDeployment removes them all', async () => {
    const { dir, uploads } = store();
    const first = uploads.issue(deployment);
    const second = uploads.issue(deployment);
    await uploads.receive(first.token, deployment, Readable.from([archive]));
    await uploads.receive(second.token, deployment, Readable.from([archive]));
    await uploads.discard(first.objectPath);
    assert.equal(await uploads.resolve(deployment, first.objectPath), null);
    assert.ok(await uploads.resolve(deployment, second.objectPath));
    await uploads.discardDeployment(deployment);
    assert.deepEqual(leftovers(dir), []);
  });

  it('sweep removes unreferenced archives once their token expired, keeps referenced and recent ones', async () => {
    const { dir, uploads } = store();
    const referenced = uploads.issue(deployment);
    const unused = uploads.issue(deployment);
    await uploads.receive(referenced.token, deployment, Readable.from([archive]));
    await uploads.receive(unused.token, deployment, Readable.from([archive]));
    const isReferenced = (objectPath: string) => objectPath === referenced.objectPath;

    assert.deepEqual(await uploads.sweep(Date.now(), isReferenced), { removed: [] });
    assert.ok(await uploads.resolve(deployment, unused.objectPath));

    const later = Date.now() + 16 * 60_000;
    assert.deepEqual(await uploads.sweep(later, isReferenced), { removed: [unused.objectPath] });
    assert.equal(await uploads.resolve(deployment, unused.objectPath), null);
    assert.ok(await uploads.resolve(deployment, referenced.objectPath));
    // Spent-token records are gone too; only the referenced archive is left.
    assert.deepEqual(leftovers(dir), [path.join(deployment, path.basename(referenced.objectPath))]);
  });
});

describe('upload store behind a real HTTP server', () => {
  const { uploads, dir } = store({ maxBytes: 1024 * 1024 });
  const deployment = randomUUID();
  let server: http.Server;
  let base: string;
  const outcomes: string[] = [];

  before(async () => {
    server = http.createServer((request, response) => {
      const token = new URL(request.url ?? '/', 'http://x').searchParams.get('token') ?? '';
      const length = request.headers['content-length'];
      uploads
        .receive(token, deployment, request, { contentLength: length === undefined ? undefined : Number(length) })
        .then(() => response.writeHead(200).end())
        .catch((error: UploadError) => {
          outcomes.push(error.kind);
          const status = { forbidden: 403, too_large: 413, not_gzip: 400, incomplete: 400 }[error.kind] ?? 500;
          response.writeHead(status, { connection: 'close' }).end(error.message);
        });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('takes the PUT the LangGraph CLI sends', async () => {
    const { token, objectPath } = uploads.issue(deployment);
    const response = await fetch(`${base}/upload?token=${token}`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/gzip', 'X-Goog-Content-Length-Range': '0,209715200' },
      body: archive,
    });
    assert.equal(response.status, 200);
    assert.deepEqual(fs.readFileSync((await uploads.resolve(deployment, objectPath)) as string), archive);
  });

  it('keeps nothing when the client goes away in the middle of the body', async () => {
    const { token, objectPath } = uploads.issue(deployment);
    const before = outcomes.length;
    await new Promise<void>((resolve) => {
      const request = http.request(`${base}/upload?token=${token}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/gzip', 'content-length': String(archive.length * 2) },
      });
      request.on('error', () => resolve());
      request.write(archive, () => setImmediate(() => request.destroy()));
    });
    while (outcomes.length === before) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(outcomes.at(-1), 'incomplete');
    assert.equal(await uploads.resolve(deployment, objectPath), null);
    assert.ok(!leftovers(dir).some((name) => name.includes(path.basename(objectPath, '.tar.gz'))), leftovers(dir).join(', '));
  });
});

describe('a received archive’s file', () => {
  it('exists, readable by its owner alone, before a byte is read, so a refusal that removes it cannot be overtaken; an existing file is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-new-file-'));
    dirs.push(dir);
    const file = path.join(dir, 'archive.part');
    const sink = await newFileSink(file);
    try {
      assert.equal(fs.statSync(file).mode & 0o777, 0o600, 'made, empty, before any write');
      await assert.rejects(newFileSink(file), { code: 'EEXIST' });
    } finally {
      sink.destroy();
    }
    fs.rmSync(file);
    if (!sink.closed) await new Promise<void>((resolve) => sink.once('close', () => resolve()));
    assert.deepEqual(fs.readdirSync(dir), [], 'nothing comes back once the stream closes');
  });
});
