import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { after, describe, it } from 'node:test';
import { createGzip, gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { ArchiveError, locateConfig, type UnpackLimits, unpackSourceArchive } from '../../src/sources/source-archive.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-archive-test-'));
after(() => fs.rmSync(work, { recursive: true, force: true }));

type Entry = { header: Partial<tar.Header> & { name: string }; body?: string | Buffer };

let counter = 0;
/** A fresh scratch directory holding nothing but what the test puts there. */
function scratch(): string {
  const dir = path.join(work, `case-${++counter}`);
  fs.mkdirSync(dir);
  return dir;
}

/** Writes a .tar.gz with exactly these headers (names, types and link targets as given). */
async function craft(dir: string, entries: Entry[]): Promise<string> {
  const pack = tar.pack();
  const file = path.join(dir, 'source.tar.gz');
  const written = pipeline(pack, createGzip({ level: 1 }), fs.createWriteStream(file));
  for (const entry of entries) {
    await new Promise<void>((resolve, reject) => pack.entry(entry.header, entry.body ?? '', (error) => (error ? reject(error) : resolve())));
  }
  pack.finalize();
  await written;
  return file;
}

/** Unpacks and expects a refusal; checks nothing was left, inside or beside the destination. */
async function refusal(entries: Entry[], limits?: Partial<UnpackLimits>, archive?: string): Promise<string> {
  const dir = scratch();
  const file = archive ?? (await craft(dir, entries));
  const destination = path.join(dir, 'project');
  try {
    await unpackSourceArchive(file, destination, { limits });
  } catch (error) {
    assert.ok(error instanceof ArchiveError, `expected an ArchiveError, got ${String(error)}`);
    assert.equal(fs.existsSync(destination), false, 'the destination was left behind');
    assert.deepEqual(
      fs.readdirSync(dir),
      fs.readdirSync(dir).filter((name) => name === path.basename(file)),
      'something was written beside it',
    );
    return error.message;
  }
  assert.fail('the archive was unpacked');
}

async function unpacked(entries: Entry[]): Promise<string> {
  const dir = scratch();
  const destination = path.join(dir, 'project');
  await unpackSourceArchive(await craft(dir, entries), destination);
  return destination;
}

const file = (name: string, body = `contents of ${name}\n`, mode?: number): Entry => ({ header: { name, type: 'file', mode }, body });
const symlink = (name: string, linkname: string): Entry => ({ header: { name, type: 'symlink', linkname } });
const hardlink = (name: string, linkname: string): Entry => ({ header: { name, type: 'link', linkname } });

describe('unpacking a source archive refuses what could escape or exhaust', () => {
  it('an entry with .. in its name, naming it', async () => {
    assert.equal(await refusal([file('langgraph.json'), file('../../etc/passwd')]), "archive entry '../../etc/passwd' escapes the project directory");
    assert.equal(await refusal([file('src/../../x')]), "archive entry 'src/../../x' escapes the project directory");
    assert.equal(await refusal([{ header: { name: '../up', type: 'directory' } }]), "archive entry '../up' escapes the project directory");
  });

  it('an absolute path', async () => {
    assert.equal(await refusal([file('/etc/cron.d/berth')]), "archive entry '/etc/cron.d/berth' is an absolute path");
  });

  it('symbolic links that point outside, by name or through other links', async () => {
    assert.equal(await refusal([symlink('etc', '/etc')]), "archive entry 'etc' is a symbolic link to '/etc', outside the project directory");
    assert.equal(await refusal([symlink('a/b', '../../x')]), "archive entry 'a/b' is a symbolic link to '../../x', outside the project directory");
    // Textually inside ('here/..' is '.'), but 'here' is the root itself, so on disk it is the parent.
    assert.equal(
      await refusal([symlink('here', '.'), symlink('up', 'here/..')]),
      "archive entry 'up' is a symbolic link to 'here/..', outside the project directory",
    );
  });

  it('writing through a symbolic link, even one that points inside', async () => {
    assert.equal(
      await refusal([{ header: { name: 'sub', type: 'directory' } }, symlink('link', 'sub'), file('link/file.txt')]),
      "archive entry 'link/file.txt' is inside a symbolic link ('link')",
    );
  });

  it('symbolic links that lead nowhere', async () => {
    assert.equal(await refusal([symlink('gone', 'missing.txt')]), "archive entry 'gone' is a symbolic link to 'missing.txt', which is not in the archive");
  });

  it('hard links outside or to anything but a file unpacked before', async () => {
    assert.equal(await refusal([hardlink('passwd', '/etc/passwd')]), "archive entry 'passwd' is a hard link to '/etc/passwd', which is an absolute path");
    assert.equal(await refusal([hardlink('x', '../outside')]), "archive entry 'x' is a hard link to '../outside', which escapes the project directory");
    assert.equal(
      await refusal([hardlink('x', 'later.txt'), file('later.txt')]),
      "archive entry 'x' is a hard link to 'later.txt', which is not a file unpacked before it",
    );
  });

  it('devices and FIFOs', async () => {
    assert.equal(
      await refusal([{ header: { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 } }]),
      "archive entry 'null' is a device or FIFO, which a project cannot contain",
    );
    assert.equal(
      await refusal([{ header: { name: 'disk', type: 'block-device', devmajor: 8, devminor: 0 } }]),
      "archive entry 'disk' is a device or FIFO, which a project cannot contain",
    );
    assert.equal(await refusal([{ header: { name: 'pipe', type: 'fifo' } }]), "archive entry 'pipe' is a device or FIFO, which a project cannot contain");
  });

  it('more than the allowed total size, naming the entry that crosses it', async () => {
    const message = await refusal([file('a.bin', 'x'.repeat(600)), file('b.bin', 'y'.repeat(600))], { maxBytes: 1000 });
    assert.equal(message, "archive entry 'b.bin' takes the unpacked project past 1000 bytes");
  });

  it('more than the allowed number of entries', async () => {
    const entries = Array.from({ length: 11 }, (_, i) => file(`f${i}.txt`));
    assert.equal(await refusal(entries, { maxEntries: 10 }), 'the archive has more than 10 entries');
  });

  it('a gzip bomb: a small download that expands far past the limit', async () => {
    const dir = scratch();
    const bomb = path.join(dir, 'bomb.tar.gz');
    const pack = tar.pack();
    const written = pipeline(pack, createGzip({ level: 9 }), fs.createWriteStream(bomb));
    const zeros = Buffer.alloc(1024 * 1024);
    const sink = pack.entry({ name: 'zeros.bin', size: 64 * zeros.length });
    for (let i = 1; i < 64; i++) if (!sink.write(zeros)) await new Promise((resolve) => sink.once('drain', () => resolve(undefined)));
    sink.end(zeros);
    pack.finalize();
    await written;
    assert.ok(fs.statSync(bomb).size < 200 * 1024, 'the bomb should be small');
    const message = await refusal([], { maxBytes: 1024 * 1024 }, bomb);
    assert.equal(message, "archive entry 'zeros.bin' takes the unpacked project past 1048576 bytes");
  });

  it('a gzip bomb hiding after the end of the archive', async () => {
    const dir = scratch();
    const pack = tar.pack();
    pack.entry({ name: 'langgraph.json' }, '{}');
    pack.finalize();
    const tarBytes: Buffer[] = [];
    for await (const chunk of pack) tarBytes.push(chunk as Buffer);
    const bomb = path.join(dir, 'bomb.tar.gz');
    fs.writeFileSync(bomb, gzipSync(Buffer.concat([...tarBytes, Buffer.alloc(32 * 1024 * 1024)]), { level: 9 }));
    const message = await refusal([], { maxBytes: 1024 * 1024, maxEntries: 10 }, bomb);
    assert.match(message, /^the archive unpacks to more than \d+ bytes$/);
  });

  it('a declared size past the default 1 GiB, before reading its contents', async () => {
    const dir = scratch();
    // A header announcing 2 GiB followed by a little data: refused at the header.
    const header = tar.pack();
    const sink = header.entry({ name: 'huge.bin', size: 2 * 1024 ** 3 });
    sink.write(Buffer.alloc(4096));
    const chunks: Buffer[] = [];
    header.on('data', (chunk) => chunks.push(chunk as Buffer));
    await new Promise((resolve) => setImmediate(resolve));
    const archive = path.join(dir, 'huge.tar.gz');
    fs.writeFileSync(archive, gzipSync(Buffer.concat(chunks)));
    assert.equal(await refusal([], undefined, archive), "archive entry 'huge.bin' takes the unpacked project past 1073741824 bytes");
  });

  it('data that is not a gzip-compressed tar', async () => {
    const dir = scratch();
    const archive = path.join(dir, 'not.tar.gz');
    fs.writeFileSync(archive, 'just text, not gzip');
    assert.match(await refusal([], undefined, archive), /^the archive is not valid gzip data/);
    fs.writeFileSync(archive, gzipSync(Buffer.from('gzip, but not a tar file'.repeat(40))));
    assert.match(await refusal([], undefined, archive), /^the archive is not a valid tar file/);
  });

  it('an archive cut off in the middle of a file (an interrupted upload)', async () => {
    const dir = scratch();
    const whole = await craft(dir, [file('langgraph.json', '{}'), file('big.bin', randomBytes(256 * 1024).toString('hex'))]);
    const cut = path.join(dir, 'cut.tar.gz');
    const bytes = fs.readFileSync(whole);
    fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    fs.rmSync(whole);
    assert.match(await refusal([], undefined, cut), /^the archive is not valid gzip data \(unexpected end of file\)$/);
  });

  it('a destination that already exists, leaving it alone', async () => {
    const dir = scratch();
    const archive = await craft(dir, [file('langgraph.json')]);
    const destination = path.join(dir, 'exists');
    fs.mkdirSync(destination);
    fs.writeFileSync(path.join(destination, 'keep.txt'), 'mine');
    await assert.rejects(unpackSourceArchive(archive, destination), { code: 'EEXIST' });
    assert.equal(fs.readFileSync(path.join(destination, 'keep.txt'), 'utf8'), 'mine');
  });
});

describe('unpacking a normal project', () => {
  it('writes files and directories with safe modes and counts them', async () => {
    const dir = scratch();
    const destination = path.join(dir, 'project');
    const files = [
      file('./langgraph.json', '{"graphs": {"agent": "./src/graph.py:graph"}}'),
      file('src/graph.py', 'graph = None\n'),
      file('run.sh', '#!/bin/sh\n', 0o4777),
      file('deep/er/still/notes.md'),
    ];
    const archive = await craft(dir, [{ header: { name: './', type: 'directory' } }, { header: { name: 'src', type: 'directory', mode: 0o700 } }, ...files]);
    const bytes = files.reduce((sum, entry) => sum + Buffer.byteLength(entry.body ?? ''), 0);
    assert.deepEqual(await unpackSourceArchive(archive, destination), { files: 4, bytes });
    assert.equal(fs.readFileSync(path.join(destination, 'src/graph.py'), 'utf8'), 'graph = None\n');
    assert.equal(fs.statSync(path.join(destination, 'run.sh')).mode & 0o7777, 0o755, 'setuid and world-write dropped, execute kept');
    assert.equal(fs.statSync(path.join(destination, 'src')).mode & 0o777, 0o755);
    assert.ok(fs.statSync(path.join(destination, 'deep/er/still')).isDirectory());
  });

  it('keeps links that stay inside, and lets later entries replace earlier ones without following them', async () => {
    const destination = await unpacked([
      file('src/real.txt', 'real'),
      symlink('current', 'src'),
      symlink('alias.txt', 'src/real.txt'),
      hardlink('copy.txt', 'src/real.txt'),
      file('alias.txt', 'replaced'),
    ]);
    assert.equal(fs.readlinkSync(path.join(destination, 'current')), 'src');
    assert.equal(fs.readFileSync(path.join(destination, 'current/real.txt'), 'utf8'), 'real');
    assert.equal(fs.statSync(path.join(destination, 'copy.txt')).ino, fs.statSync(path.join(destination, 'src/real.txt')).ino);
    assert.ok(fs.lstatSync(path.join(destination, 'alias.txt')).isFile());
    assert.equal(fs.readFileSync(path.join(destination, 'alias.txt'), 'utf8'), 'replaced');
    assert.equal(fs.readFileSync(path.join(destination, 'src/real.txt'), 'utf8'), 'real', 'the link target was not written through');
  });

  it('unpacks an archive made the way the LangGraph CLI makes it, and finds its langgraph.json', async (t) => {
    const python = spawnSync('python3', ['--version']);
    if (python.status !== 0) {
      t.skip('python3 is not installed: it writes the archive with tarfile exactly as the CLI does');
      return;
    }
    const dir = scratch();
    // A monorepo: the project in agent/ depends on ../shared, so the CLI roots the archive at
    // their common ancestor and adds files only (no directory entries), with no links.
    const tree = path.join(dir, 'repo');
    const files: Record<string, string> = {
      'agent/langgraph.json': '{"dependencies": [".", "../shared"], "graphs": {"agent": "./agent.py:graph"}}',
      'agent/agent.py': 'graph = None\n',
      [`agent/${'a-name-long-enough-to-need-a-long-name-record-'.padEnd(140, 'x')}/deep.py`]: 'x = 1\n',
      'shared/pyproject.toml': '[project]\nname = "shared"\n',
      'shared/shared/__init__.py': '',
    };
    for (const [name, body] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(tree, name)), { recursive: true });
      fs.writeFileSync(path.join(tree, name), body);
    }
    const archive = path.join(dir, 'source.tar.gz');
    const script = [
      'import os, sys, tarfile',
      'root, out = sys.argv[1], sys.argv[2]',
      'with tarfile.open(out, "w:gz") as tar:',
      '    for base in ("agent", "shared"):',
      '        for folder, _, names in os.walk(os.path.join(root, base)):',
      '            for name in names:',
      '                full = os.path.join(folder, name)',
      '                info = tar.gettarinfo(full, arcname=os.path.relpath(full, root))',
      '                with open(full, "rb") as handle:',
      '                    tar.addfile(info, handle)',
    ].join('\n');
    const made = spawnSync('python3', ['-c', script, tree, archive], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);

    const destination = path.join(dir, 'project');
    const result = await unpackSourceArchive(archive, destination);
    assert.equal(result.files, Object.keys(files).length);
    for (const [name, body] of Object.entries(files)) assert.equal(fs.readFileSync(path.join(destination, name), 'utf8'), body, name);

    const hinted = await locateConfig(destination, 'agent/langgraph.json');
    assert.deepEqual(hinted, { configPath: 'agent/langgraph.json', projectDir: path.join(fs.realpathSync(destination), 'agent') });
    assert.deepEqual(await locateConfig(destination), hinted);
  });
});

describe('finding langgraph.json', () => {
  it('takes the root one over nested ones (e.g. in examples or node_modules)', async () => {
    const destination = await unpacked([file('examples/x/langgraph.json'), file('langgraph.json'), file('node_modules/pkg/langgraph.json')]);
    assert.equal((await locateConfig(destination)).configPath, 'langgraph.json');
  });

  it('asks for langgraph_config_path when the shallowest level has several', async () => {
    const destination = await unpacked([file('a/langgraph.json'), file('b/langgraph.json')]);
    await assert.rejects(locateConfig(destination), {
      message: "the uploaded archive has several langgraph.json files ('a/langgraph.json', 'b/langgraph.json'); set langgraph_config_path to choose one",
    });
    assert.equal((await locateConfig(destination, './b/langgraph.json')).configPath, 'b/langgraph.json');
  });

  it('says what the archive has when the given path is not in it', async () => {
    const destination = await unpacked([file('agent/langgraph.json')]);
    await assert.rejects(locateConfig(destination, 'langgraph.json'), {
      message: "langgraph_config_path 'langgraph.json' is not a file in the uploaded archive; it has 'agent/langgraph.json'",
    });
    await assert.rejects(locateConfig(destination, '../langgraph.json'), {
      message: "langgraph_config_path '../langgraph.json' must name a file inside the archive",
    });
    const empty = await unpacked([file('README.md')]);
    await assert.rejects(locateConfig(empty), { message: 'the uploaded archive has no langgraph.json' });
  });

  it('follows a configuration link inside the project, never one that leads out', async () => {
    const destination = await unpacked([file('real/langgraph.json'), symlink('langgraph.json', 'real/langgraph.json')]);
    assert.equal((await locateConfig(destination, 'langgraph.json')).configPath, 'langgraph.json');
    // Unpacking refuses such a link; should one appear later, the lookup still does not leave the root.
    const outside = path.join(path.dirname(destination), 'outside.json');
    fs.writeFileSync(outside, '{}');
    fs.symlinkSync(outside, path.join(destination, 'escape.json'));
    await assert.rejects(locateConfig(destination, 'escape.json'), { message: /^langgraph_config_path 'escape.json' is not a file in the uploaded archive/ });
  });
});
