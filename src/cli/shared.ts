/** What every client command shares: connection options, the client, bodies, and running an action. */
import fs from 'node:fs';
import { type Command, Option } from 'commander';
import yaml from 'js-yaml';
import { type BerthClient, createBerthClient } from '../client/index.js';
import { type ConnectionFlags, resolveConnection } from './config.js';
import { reportFailure } from './errors.js';
import { CliExit, EXIT, type CliIo } from './io.js';
import { OUTPUT_FORMATS, type OutputFormat } from './output.js';

export interface CliContext {
  io: CliIo;
  /** Records the command's exit code. */
  exit(code: number): void;
}

/** `--url`, `--api-key`, `--tenant-id`, `--profile` on a command that calls Berth. */
export function connected(command: Command): Command {
  return command
    .option('--url <url>', 'Berth URL (default: BERTH_URL, then the profile)')
    .option('--api-key <key>', 'API key (prefer BERTH_API_KEY or `berth login`: flags show in the process list)')
    .option('--tenant-id <id>', 'workspace id, for admin keys (default: BERTH_TENANT_ID, then the profile)')
    .option('--profile <name>', 'profile written by `berth login` (default: the current one)');
}

/** `-o, --output table|json|yaml` on a read. */
export function readable(command: Command): Command {
  return connected(command).addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'));
}

export function clientFor(io: CliIo, flags: ConnectionFlags): BerthClient {
  const { url, apiKey, tenantId } = resolveConnection(flags, io.env);
  return createBerthClient({ baseUrl: url, apiKey, tenantId });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- user-given JSON and commander options are untyped
export type Options = ConnectionFlags & { output?: OutputFormat } & Record<string, any>;

/**
 * The action of a command: runs `body` with the command's arguments and options, prints a
 * failure the CLI way, and records the exit code (0 unless `body` returns another).
 */
export function action(context: CliContext, body: (options: Options, ...args: string[]) => Promise<number | void>) {
  return async (...received: unknown[]) => {
    const command = received.at(-1) as Command;
    const options = command.opts() as Options;
    const args = received.slice(0, -2) as string[];
    try {
      context.exit((await body(options, ...args)) ?? EXIT.ok);
    } catch (error) {
      context.exit(reportFailure(context.io, error));
    }
  };
}

/** A request body from `--data <json|yaml>` or `--file <path>` (JSON or YAML), or {}. */
export function bodyFrom(options: { data?: string; file?: string } & Record<string, unknown>): Record<string, unknown> {
  if (options.data && options.file) throw new CliExit(EXIT.usage, '--data and --file cannot be used together');
  let text: string | undefined = options.data;
  if (options.file) {
    try {
      text = fs.readFileSync(options.file, 'utf8');
    } catch (error) {
      throw new CliExit(EXIT.usage, `cannot read ${options.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = yaml.load(text);
  } catch (error) {
    throw new CliExit(
      EXIT.usage,
      `the ${options.file ? `file ${options.file}` : '--data value'} is not valid JSON or YAML: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new CliExit(EXIT.usage, 'the request body must be an object');
  return value as Record<string, unknown>;
}

export function withBody(command: Command): Command {
  return command.option('--data <json>', 'request body as JSON or YAML').option('--file <path>', 'request body from a JSON or YAML file');
}

/** Collects a repeatable option's values. */
export function repeatable(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function parseSecrets(io: CliIo, given: string[] | undefined): { name: string; value: string }[] | undefined {
  if (!given || given.length === 0) return undefined;
  return given.map((entry) => {
    const at = entry.indexOf('=');
    const name = at === -1 ? entry : entry.slice(0, at);
    const value = at === -1 ? io.env[entry] : entry.slice(at + 1);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new CliExit(EXIT.usage, `--secret ${JSON.stringify(name)} is not a valid variable name`, 'use --secret NAME=VALUE');
    if (value === undefined)
      throw new CliExit(EXIT.usage, `--secret ${name}: no value given and ${name} is not set in the environment`, 'use --secret NAME=VALUE');
    return { name, value };
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A deployment id from an id or a name. */
export async function deploymentIdOf(client: BerthClient, reference: string): Promise<string> {
  if (UUID.test(reference)) return reference;
  const found = await findDeployment(client, reference);
  if (!found) throw new CliExit(EXIT.usage, `no deployment is named "${reference}"`, '`berth deployments list` shows the deployments');
  return found.id;
}

export async function findDeployment(client: BerthClient, name: string) {
  const page = await client.deployments.list({ name, limit: 100 });
  return page.resources.find((deployment) => deployment.name === name);
}
