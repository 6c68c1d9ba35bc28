import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { access, constants, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './process.js';
import { deadline } from './deadline.js';

const execFileAsync = promisify(execFile);

async function executable(file: string): Promise<boolean> {
  return access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function onPath(name: string): Promise<string | null> {
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    if (await executable(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

/** The OpenSSH server to test with: BERTH_TEST_SSHD, /usr/sbin/sshd, or sshd on PATH. */
export async function findSshd(): Promise<string | null> {
  for (const candidate of [process.env.BERTH_TEST_SSHD, '/usr/sbin/sshd', await onPath('sshd')]) {
    if (candidate && (await executable(candidate))) return path.resolve(candidate);
  }
  return null;
}

/** Why an SSH server cannot run here, or null when it can. */
export async function sshUnavailable(): Promise<string | null> {
  if (!(await findSshd())) return 'no OpenSSH server (sshd) is installed: install openssh-server or set BERTH_TEST_SSHD to an sshd binary';
  if (!(await onPath('ssh')) || !(await onPath('ssh-keygen'))) return 'the OpenSSH client (ssh, ssh-keygen) is not installed';
  if (process.getuid?.() === 0 && !(await onPath('unshare'))) {
    return 'sshd run as root needs unshare(1) to give it a private /run/sshd (and "sshd" user) in its own mount namespace';
  }
  return null;
}

export interface SshServer {
  port: number;
  user: string;
  /** The server's host key as a known_hosts line. */
  knownHostsLine: string;
  /** A private key (OpenSSH format) the server accepts. */
  clientKey: string;
  /** A private key it does not accept. */
  strangerKey: string;
  close(): Promise<void>;
}

async function hasPrivsepUser(): Promise<boolean> {
  return /^sshd:/m.test(await readFile('/etc/passwd', 'utf8').catch(() => ''));
}

async function keyPair(file: string): Promise<{ privateKey: string; publicKey: string }> {
  await execFileAsync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'berth-test', '-f', file]);
  return { privateKey: await readFile(file, 'utf8'), publicKey: (await readFile(`${file}.pub`, 'utf8')).trim() };
}

/**
 * A real sshd on a loopback port that lets the current user in with one key. As root
 * without the "sshd" privilege-separation user, sshd runs in a private mount namespace
 * whose /etc/passwd has that user and whose /run is a fresh tmpfs, so the machine's own
 * files are left alone.
 */
export async function startSshServer(dir: string): Promise<SshServer> {
  const sshd = await findSshd();
  if (!sshd) throw new Error('sshd not found');
  const port = await freePort();
  const host = await keyPair(path.join(dir, 'host_key'));
  const client = await keyPair(path.join(dir, 'client_key'));
  const stranger = await keyPair(path.join(dir, 'stranger_key'));
  await writeFile(path.join(dir, 'authorized_keys'), `${client.publicKey}\n`, { mode: 0o600 });
  const config = path.join(dir, 'sshd_config');
  await writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${path.join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'PidFile none',
      '',
    ].join('\n'),
  );
  let child: ChildProcess;
  if (process.getuid?.() === 0) {
    // sshd as root wants its privilege-separation directory /run/sshd (and the "sshd"
    // user): both come from a private mount namespace, not from the machine's own files.
    const passwd = path.join(dir, 'passwd');
    const withUser = (await hasPrivsepUser()) ? '' : 'mount --bind "$1" /etc/passwd && ';
    await writeFile(passwd, `${await readFile('/etc/passwd', 'utf8')}sshd:x:65534:65534::/run/sshd:/usr/sbin/nologin\n`);
    const script = `${withUser}mount -t tmpfs tmpfs /run && mkdir /run/sshd && exec "$2" -D -e -f "$3"`;
    child = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', passwd, sshd, config], { stdio: ['ignore', 'ignore', 'pipe'] });
  } else {
    child = spawn(sshd, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  }
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sshd did not start: ${output.join('')}`)), deadline(10_000));
    child.stderr?.on('data', (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes('Server listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`sshd exited: ${output.join('')}`));
    });
  });
  const [type, key] = host.publicKey.split(' ');
  return {
    port,
    user: os.userInfo().username,
    knownHostsLine: `[127.0.0.1]:${port} ${type} ${key}`,
    clientKey: client.privateKey,
    strangerKey: stranger.privateKey,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
