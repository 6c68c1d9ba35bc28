import { DriverError, type StepContext } from '../types.js';
import { lastLine, runCommand, type ResolvedRuntime } from './cli.js';
import { BERTH_REGISTRIES_CONF } from './detect.js';
import { formatSeconds, safeLog, throwIfAborted } from './step.js';

const PULL_TIMEOUT_MS = 10 * 60_000;

export async function ensureImage(runtime: ResolvedRuntime, image: string, context: StepContext): Promise<void> {
  const present =
    runtime.kind === 'podman'
      ? await runCommand(runtime, ['image', 'exists', image], { signal: context.signal })
      : await runCommand(runtime, ['image', 'inspect', '--format', '{{.Id}}', image], { signal: context.signal });
  throwIfAborted(context.signal, `checking image ${image}`);
  if (present.code === 0) {
    await context.log('INFO', `Image ${image} is present locally`);
    return;
  }
  await context.log('INFO', `Image ${image} is not present locally; pulling it`);
  const startedAt = Date.now();
  const pulled = await runCommand(runtime, ['pull', image], { signal: context.signal, timeoutMs: PULL_TIMEOUT_MS });
  throwIfAborted(context.signal, `pulling image ${image}`);
  if (pulled.code !== 0) {
    const why = pulled.failure === 'timeout' ? `the pull did not finish within ${formatSeconds(PULL_TIMEOUT_MS)}` : lastLine(pulled);
    await safeLog(context, 'ERROR', `Pulling ${image} failed: ${why}`);
    throw new DriverError(
      `Image '${image}' was not found locally and could not be pulled: ${why}. ` +
        'Check the image name and tag, and that its registry is reachable from this machine ' +
        `(a registry without TLS, such as one on 127.0.0.1:5000, must be marked insecure in ${BERTH_REGISTRIES_CONF} or CONTAINERS_REGISTRIES_CONF).`,
    );
  }
  await context.log('INFO', `Pulled ${image} in ${formatSeconds(Date.now() - startedAt)}`);
}
