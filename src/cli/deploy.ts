/**
 * `berth deploy`: create or update a deployment by name, then follow its new revision over
 * the event stream until it is terminal. Exit 0 on DEPLOYED, 1 on a failure, 2 on timeout,
 * 3 on bad usage or a refused request; `--json` prints one JSON object per line.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { BerthApiError, type BerthClient, type Deployment, type DeploymentEvent, isTerminal } from '../client/index.js';
import { reportFailure } from './errors.js';
import { CliExit, EXIT, type CliIo } from './io.js';
import { action, bodyFrom, type CliContext, clientFor, connected, findDeployment, type Options, parseSecrets, repeatable } from './shared.js';

interface DeploySpec {
  name: string;
  image: string;
  secrets?: { name: string; value: string }[];
  listener?: string;
  displayName?: string;
  deploymentType?: string;
}

/** Log lines kept to show when a revision fails. */
const KEPT_LOG_LINES = 20;

function specFrom(io: CliIo, options: Options): DeploySpec {
  const file = options.file ?? (fs.existsSync('berth.json') ? 'berth.json' : undefined);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- user-given JSON and commander options are untyped
  const fromFile = file ? (bodyFrom({ file }) as Record<string, any>) : {};
  const fileSecrets = fromFile.secrets;
  const secretsFromFile = Array.isArray(fileSecrets)
    ? (fileSecrets as { name: string; value: string }[])
    : fileSecrets && typeof fileSecrets === 'object'
      ? Object.entries(fileSecrets as Record<string, unknown>).map(([name, value]) => ({ name, value: String(value) }))
      : undefined;
  const name = options.name ?? fromFile.name;
  const image = options.image ?? fromFile.image;
  if (typeof name !== 'string' || !name)
    throw new CliExit(EXIT.usage, 'deploy needs a deployment name', `pass --name or put "name" in ${file ?? 'berth.json'}`);
  if (typeof image !== 'string' || !image) throw new CliExit(EXIT.usage, 'deploy needs an image', `pass --image or put "image" in ${file ?? 'berth.json'}`);
  return {
    name,
    image,
    secrets: parseSecrets(io, options.secret) ?? secretsFromFile,
    listener: options.listener ?? fromFile.listener,
    displayName: options.displayName ?? fromFile.display_name,
    deploymentType: options.deploymentType ?? fromFile.deployment_type,
  };
}

/**
 * An event id the new revision's events all come after: the newest log line of the revision
 * that was latest before the change (log line ids are event ids). The stream then starts
 * there instead of replaying the deployment's whole history.
 */
async function eventsBefore(berth: BerthClient, deploymentId: string, revisionId: string | null): Promise<string | undefined> {
  if (!revisionId) return undefined;
  const newest = await Promise.all(
    (['build', 'deploy'] as const).map((type) =>
      berth.revisions.logs(deploymentId, revisionId, { type, order: 'desc', limit: 1 }).then((page) => page.logs[0]?.id),
    ),
  );
  const ids = newest.filter((id): id is string => id !== undefined && /^\d+$/.test(id)).map(Number);
  return ids.length > 0 ? String(Math.max(...ids)) : undefined;
}

/** Creates the deployment or changes it; answers the revision to follow. */
async function apply(
  berth: BerthClient,
  spec: DeploySpec,
): Promise<{ name: string; deploymentId: string; revisionId: string; created: boolean; unchanged: boolean; since?: string }> {
  const existing = await findDeployment(berth, spec.name);
  const since = existing ? await eventsBefore(berth, existing.id, existing.latest_revision_id) : undefined;
  const sourceConfig = { ...(spec.listener ? { listener_id: spec.listener } : {}), ...(spec.deploymentType ? { deployment_type: spec.deploymentType } : {}) };
  // A read-modify-write with If-Match: "unchanged" below compares with the deployment the PATCH applied to.
  let before: { latest_revision_id: string | null } | undefined = existing;
  let deployment: Deployment;
  if (existing) {
    const modified = await berth.deployments.modify(existing.id, () => ({
      source_revision_config: { image_uri: spec.image },
      ...(spec.secrets ? { secrets: spec.secrets } : {}),
      ...(Object.keys(sourceConfig).length > 0 ? { source_config: sourceConfig as never } : {}),
      ...(spec.displayName ? { display_name: spec.displayName } : {}),
    }));
    before = modified.before;
    deployment = modified.after!;
  } else {
    // Sent with an Idempotency-Key, so the client's retries create one deployment.
    deployment = await berth.deployments.create({
      name: spec.name,
      source: 'external_docker',
      source_config: sourceConfig as never,
      source_revision_config: { image_uri: spec.image },
      secrets: spec.secrets ?? [],
    });
  }
  if (!deployment.latest_revision_id) throw new CliExit(EXIT.failed, `deployment ${deployment.id} has no revision to follow`);
  // Nothing that makes a revision changed: follow the current one from its start.
  const unchanged = before !== undefined && deployment.latest_revision_id === before.latest_revision_id;
  return {
    name: deployment.name,
    deploymentId: deployment.id,
    revisionId: deployment.latest_revision_id,
    created: !existing,
    unchanged,
    ...(since && !unchanged ? { since } : {}),
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

export function registerDeployCommand(program: Command, context: CliContext): void {
  const { io } = context;
  connected(
    program
      .command('deploy')
      .description('Create or update a deployment by name from flags or a file, and wait until its new revision is terminal.')
      .option('--name <name>', 'deployment name (created if it does not exist)')
      .option('--image <ref>', 'container image to run')
      .option('--secret <NAME=VALUE>', 'secret environment variable (repeatable; NAME alone reads it from the environment)', repeatable)
      .option('--listener <id>', 'listener that runs the deployment')
      .option('--display-name <text>', 'display name')
      .option('--deployment-type <type>', 'dev or prod (default prod)')
      .option('--file <path>', 'settings from a JSON or YAML file (default: ./berth.json when it exists); flags win')
      .option('--timeout <seconds>', 'give up waiting after this long (exit 2)', Number, 900)
      .option('--json', 'print one JSON object per line (status changes, log lines, a final result) and nothing else on stdout'),
  ).action(
    action(context, async (options) => {
      const started = Date.now();
      const json = options.json === true;
      const line = (object: Record<string, unknown>) => io.out(`${JSON.stringify(object)}\n`);
      const finish = (code: number, result: Record<string, unknown>) => {
        if (json) line({ type: 'result', exit_code: code, elapsed_seconds: (Date.now() - started) / 1000, ...result });
        return code;
      };
      const failed = (error: unknown, extra: Record<string, unknown> = {}) => {
        const code = reportFailure(io, error);
        const detail = error instanceof BerthApiError ? { status: error.status, code: error.code, detail: error.detail } : { detail: (error as Error).message };
        return finish(code, { status: null, ...extra, error: detail });
      };

      let target: Awaited<ReturnType<typeof apply>>;
      try {
        if (!Number.isFinite(options.timeout) || options.timeout <= 0) throw new CliExit(EXIT.usage, '--timeout must be a number of seconds above 0');
        const spec = specFrom(io, options);
        target = await apply(clientFor(io, options), spec);
      } catch (error) {
        return failed(error);
      }
      const berth = clientFor(io, options);
      const { deploymentId, revisionId, created, unchanged, since, name } = target;
      const verb = created ? 'created' : unchanged ? 'no change to' : 'updated';
      if (!json) io.out(`${verb} deployment ${name} (${deploymentId}); following revision ${revisionId}\n`);

      const timeout = AbortSignal.timeout(options.timeout * 1000);
      const logs: { type: string; message: string }[] = [];
      let status = 'UNKNOWN';
      let message: string | null = null;
      let lastLog = '';
      const progress = () => {
        if (!json) io.status(`${status} ${seconds(Date.now() - started)}${lastLog ? `  ${lastLog}` : ''}`);
      };
      const ticker = !json && io.isTTY ? setInterval(progress, 200) : undefined;
      try {
        status = (await berth.revisions.get(deploymentId, revisionId)).status;
        const events = berth.followEvents(deploymentId, {
          ...(since ? { lastEventId: since } : {}),
          signal: timeout,
          onReconnect: (last) => (json ? undefined : io.err(`the event stream dropped; reconnecting after event ${last ?? 'none'}\n`)),
        });
        for await (const event of events as AsyncIterable<DeploymentEvent>) {
          if (event.data.revision_id !== revisionId) continue;
          const elapsed = Date.now() - started;
          if (event.event === 'log') {
            logs.push({ type: event.data.type, message: event.data.message });
            if (logs.length > KEPT_LOG_LINES) logs.shift();
            lastLog = event.data.message.split('\n')[0]!.slice(0, 100);
            if (json) line({ type: 'log', log_type: event.data.type, level: event.data.level, message: event.data.message, timestamp: event.data.timestamp });
            else progress();
            continue;
          }
          if (event.event !== 'status') continue;
          status = event.data.status;
          message = event.data.message;
          if (json) line({ type: 'status', status, message, at: event.data.at, elapsed_seconds: elapsed / 1000 });
          else {
            if (io.isTTY) io.status('');
            io.out(`  ${seconds(elapsed).padStart(7)}  ${status}${message ? `  ${message}` : ''}\n`);
          }
          if (isTerminal(status)) break;
        }
      } catch (error) {
        return failed(error, { deployment_id: deploymentId, revision_id: revisionId, last_status: status });
      } finally {
        if (ticker) clearInterval(ticker);
        if (!json && io.isTTY) io.status('');
      }

      const result = { deployment_id: deploymentId, revision_id: revisionId, status };
      if (!isTerminal(status)) {
        io.err(
          `berth: revision ${revisionId} is still ${status} after ${options.timeout}s\n  try: \`berth revisions logs ${deploymentId} ${revisionId} --follow\` to keep watching\n`,
        );
        return finish(EXIT.timeout, { ...result, timed_out: true });
      }
      if (status === 'DEPLOYED') {
        const revision = await berth.revisions.get(deploymentId, revisionId).catch(() => undefined);
        if (!json) io.out(`deployed in ${seconds(Date.now() - started)}${revision?.url ? ` at ${revision.url}` : ''}\n`);
        return finish(EXIT.ok, { ...result, url: revision?.url ?? null });
      }
      const revision = await berth.revisions.get(deploymentId, revisionId).catch(() => undefined);
      const statusMessage = revision?.status_message ?? message;
      io.err(`berth: revision ${revisionId} is ${status}${statusMessage ? `: ${statusMessage}` : ''}\n`);
      if (logs.length > 0) io.err(`last log lines:\n${logs.map((entry) => `  [${entry.type}] ${entry.message}`).join('\n')}\n`);
      io.err(`  try: \`berth revisions logs ${deploymentId} ${revisionId}\` for every line\n`);
      return finish(EXIT.failed, { ...result, status_message: statusMessage, last_logs: logs });
    }),
  );
}
