import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runTool } from '../containers/commands.js';
import { runInProcessGroup } from './process-group.js';
import { BuildError, type BuildLog, type ResolvedBuilder } from './types.js';

export interface RegistryCredentials {
  username: string;
  password: string;
}

export interface PushOptions {
  /**
   * Verify the registry's TLS certificate (default true). A plain-HTTP registry, such as
   * one on 127.0.0.1:5000, needs false. Docker decides this in its daemon's settings
   * (127.0.0.0/8 is allowed without TLS there), so it ignores this option.
   */
  tlsVerify?: boolean;
  /** An existing auth file (containers-auth.json / Docker config.json format). */
  authFile?: string;
  /** Credentials to push with; written to a private temporary auth file, never to argv. */
  credentials?: RegistryCredentials;
  /** Where to push, when not to the name the image already has. */
  destination?: string;
}

export interface PushedImage {
  /** The reference pushed to. */
  image: string;
  /** The manifest digest (`sha256:…`) when the builder reported it. */
  digest?: string;
}

/** Pushes a built image to its registry, streaming the builder's output to `log`. */
export async function pushImage(builder: ResolvedBuilder, image: string, options: PushOptions, log: BuildLog, signal?: AbortSignal): Promise<PushedImage> {
  const destination = options.destination ?? image;
  if (options.authFile && options.credentials) throw new BuildError('Pass either an auth file or credentials to push with, not both.');
  const work = await mkdtemp(path.join(os.tmpdir(), 'berth-push-'));
  try {
    const authFile = await prepareAuth(builder, work, destination, options);
    const digestFile = path.join(work, 'digest');
    let args: string[];
    if (builder.kind === 'docker') {
      if (destination !== image) {
        const tagged = await runTool(builder, ['tag', image, destination], { signal });
        if (tagged.code !== 0)
          throw new BuildError(`Could not name ${image} as ${destination} to push it: ${tagged.stderr.trim() || `exit code ${tagged.code}`}.`);
      }
      // Docker reads credentials from a config directory, not a file.
      args = [...(authFile ? ['--config', path.dirname(authFile)] : []), 'push', destination];
    } else {
      args = [
        'push',
        `--tls-verify=${options.tlsVerify ?? true}`,
        '--digestfile',
        digestFile,
        ...(authFile ? ['--authfile', authFile] : []),
        image,
        `docker://${destination}`,
      ];
    }
    const result = await runInProcessGroup(builder, args, { log, signal });
    if (result.aborted) throw new BuildError(`Pushing ${destination} was stopped.`, 'aborted', { cause: signal?.reason });
    if (result.spawnError)
      throw new BuildError(`Could not start ${builder.binary} to push ${destination}: ${result.spawnError.code ?? result.spawnError.message}.`);
    if (result.code !== 0) throw new BuildError(explainPushFailure(destination, result.tail, options));
    const digest = (await readFile(digestFile, 'utf8').catch(() => '')).trim() || digestFromOutput(result.tail);
    return { image: destination, digest: digest || undefined };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The auth file to pass, in a directory only this process's user can read. */
async function prepareAuth(builder: ResolvedBuilder, work: string, destination: string, options: PushOptions): Promise<string | undefined> {
  const file = path.join(work, builder.kind === 'docker' ? 'config.json' : 'auth.json');
  if (options.credentials) {
    const { username, password } = options.credentials;
    const auth = Buffer.from(`${username}:${password}`).toString('base64');
    await writeFile(file, JSON.stringify({ auths: { [registryOf(destination, builder.kind)]: { auth } } }), { mode: 0o600 });
    return file;
  }
  if (!options.authFile) return undefined;
  if (builder.kind !== 'docker') return options.authFile;
  await copyFile(options.authFile, file);
  return file;
}

/** The registry part of an image reference, as auth files key it. */
export function registryOf(reference: string, kind: ResolvedBuilder['kind']): string {
  const first = reference.split('/')[0] ?? '';
  const hasRegistry = reference.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return first;
  return kind === 'docker' ? 'https://index.docker.io/v1/' : 'docker.io';
}

function explainPushFailure(destination: string, tail: string[], options: PushOptions): string {
  const text = tail.join('\n');
  const registry = registryOf(destination, 'buildah');
  if (/server gave HTTP response to HTTPS client/.test(text)) {
    return `Pushing ${destination} failed: ${registry} speaks plain HTTP. Push with TLS verification off (tlsVerify: false), or serve the registry over HTTPS.`;
  }
  if (/x509:|certificate signed by unknown authority|tls: /.test(text)) {
    return `Pushing ${destination} failed: the TLS certificate of ${registry} is not trusted here. Add its CA to the machine's trust store, or push with TLS verification off if the registry is local.`;
  }
  if (/unauthorized|authentication required|denied|401|403/i.test(text)) {
    const how = options.credentials || options.authFile ? 'refused the credentials given' : 'requires credentials and none were given';
    return `Pushing ${destination} failed: ${registry} ${how}. Check the registry user and password (or auth file) Berth pushes with.`;
  }
  if (/connection refused|no such host|i\/o timeout|network is unreachable|dial tcp/i.test(text)) {
    return `Pushing ${destination} failed: ${registry} is not reachable from this machine. Check the registry address and that it is running.`;
  }
  const last = tail.filter((line) => !/^(Getting image|Copying|Writing manifest|Storing signatures)/.test(line)).at(-1) ?? 'no output';
  return `Pushing ${destination} failed: ${last.replace(/^(?:Error|error):\s*/, '').slice(0, 300)}.`;
}

function digestFromOutput(tail: string[]): string {
  for (const line of [...tail].reverse()) {
    const match = /digest: (sha256:[0-9a-f]{64})/.exec(line);
    if (match?.[1]) return match[1];
  }
  return '';
}
