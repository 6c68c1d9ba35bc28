import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BuildSandbox } from '../../src/sandbox/sandbox.js';
import { buildSandboxUnavailable, type TestBuildDir, tempBuildDir } from '../support/build-sandbox.js';

const execFileAsync = promisify(execFile);
const skip = await buildSandboxUnavailable();

/** How a TCP connection attempt to 127.0.0.1:port ended: `connected`, an error code, or `no answer`. */
async function connectAs(uid: number | null, port: number): Promise<string> {
  const script = `const s = require('net').connect(${port}, '127.0.0.1'); s.on('connect', () => { console.log('connected'); process.exit(); }); s.on('error', (e) => { console.log(e.code); process.exit(); }); setTimeout(() => { console.log('no answer'); process.exit(); }, 20000);`;
  const command = uid === null ? ['node', '-e', script] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'node', '-e', script];
  const { stdout } = await execFileAsync(command[0] as string, command.slice(1));
  return stdout.trim();
}

/**
 * The build firewall on the real host: the build user's connections to this host are
 * refused at once, and nobody else's traffic is touched: with it loaded, a connection to a
 * closed port still gets the kernel's reset (the rule once matched those resets too, which
 * made every closed loopback port hang for everyone).
 */
describe('the build firewall', { skip: skip ?? false }, () => {
  let builds: TestBuildDir;
  let sandbox: BuildSandbox;
  let server: net.Server;
  let port: number;

  before(async () => {
    builds = await tempBuildDir();
    const prepared = await BuildSandbox.prepare({ user: 'berth-build', dir: builds.path, memoryMb: 512, cpus: 1, pids: 256, diskMb: 0, denyNetworks: [] });
    assert.ok(typeof prepared !== 'string', String(prepared));
    sandbox = prepared;
    server = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.end('hi\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });

  after(async () => {
    server?.close();
    await builds?.remove();
  });

  test("the build user's connections to this host are refused at once", async () => {
    assert.equal(await connectAs(sandbox.user.uid, port), 'ECONNREFUSED');
  });

  test('everyone else still reaches the host, and a closed port still answers with a reset', async () => {
    assert.equal(await connectAs(null, port), 'connected');
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    assert.equal(await connectAs(null, closed), 'ECONNREFUSED');
    const nobody = Number((await execFileAsync('id', ['-u', 'nobody'])).stdout.trim());
    assert.equal(await connectAs(nobody, port), 'connected');
  });
});
