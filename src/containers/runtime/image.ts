import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DriverError, type RunRequest, type StepContext } from '../driver.js';
import { lastOutputClause, runTool } from '../commands.js';
import { type ResolvedRuntime } from '../detect.js';
import { BERTH_REGISTRIES_CONF } from '../tools.js';
import { formatSeconds, safeLog, throwIfAborted } from './step.js';

const PULL_TIMEOUT_MS = 10 * 60_000;

/** Pulls the image unless it is present; whether it pulled. */
export async function ensureImage(runtime: ResolvedRuntime, image: string, context: StepContext, pull?: RunRequest['pull']): Promise<boolean> {
  const present =
    runtime.kind === 'podman'
      ? await runTool(runtime, ['image', 'exists', image], { signal: context.signal })
      : await runTool(runtime, ['image', 'inspect', '--format', '{{.Id}}', image], { signal: context.signal });
  throwIfAborted(context.signal, `checking image ${image}`);
  if (present.code === 0) {
    await context.log('INFO', `Image ${image} is present locally`);
    return false;
  }
  await context.log('INFO', `Image ${image} is not present locally; pulling it`);
  const startedAt = Date.now();
  const pulled = await withPullAuth(runtime, image, pull, (flags) =>
    runTool(runtime, [...flags.global, 'pull', ...flags.pull, image], { signal: context.signal, timeoutMs: PULL_TIMEOUT_MS }),
  );
  throwIfAborted(context.signal, `pulling image ${image}`);
  if (pulled.code !== 0) {
    const why = pulled.failure === 'timeout' ? `the pull did not finish within ${formatSeconds(PULL_TIMEOUT_MS)}` : lastOutputClause(pulled);
    await safeLog(context, 'ERROR', `Pulling ${image} failed: ${why}`);
    throw new DriverError(
      `Image '${image}' was not found locally and could not be pulled: ${why}. ` +
        'Check the image name and tag, and that its registry is reachable from this machine ' +
        `(a registry without TLS, such as one on 127.0.0.1:5000, must be marked insecure in ${BERTH_REGISTRIES_CONF} or CONTAINERS_REGISTRIES_CONF).`,
    );
  }
  await context.log('INFO', `Pulled ${image} in ${formatSeconds(Date.now() - startedAt)}`);
  return true;
}

/**
 * Runs a pull with credentials in a private temporary auth file (never in argv): podman
 * takes it with --authfile, docker as the config.json of a --config directory.
 */
async function withPullAuth<T>(
  runtime: ResolvedRuntime,
  image: string,
  pull: RunRequest['pull'],
  run: (flags: { global: string[]; pull: string[] }) => Promise<T>,
): Promise<T> {
  if (!pull) return run({ global: [], pull: [] });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-pull-'));
  try {
    const host = image.split('/')[0] as string;
    const file = path.join(dir, 'config.json');
    const auth = Buffer.from(`${pull.username}:${pull.password}`).toString('base64');
    await writeFile(file, JSON.stringify({ auths: { [host]: { auth } } }), { mode: 0o600 });
    return await run(
      runtime.kind === 'podman'
        ? { global: [], pull: ['--authfile', file, ...(pull.tlsVerify ? [] : ['--tls-verify=false'])] }
        : { global: ['--config', dir], pull: [] },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
