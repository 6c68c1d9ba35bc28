// `berth dockerfile [-c langgraph.json] [OUTPUT]`: the LangGraph CLI's `langgraph dockerfile`
// (same Dockerfile, same extra files with --add-docker-compose). Without OUTPUT the
// Dockerfile goes to stdout, exactly as it would be written to a file (no final newline),
// and messages go to stderr.
import fs from 'node:fs/promises';
import path from 'node:path';
import { type Command, Option } from 'commander';
import { DOCKERIGNORE, ENV_TEMPLATE, composeFile } from './compose-files.js';
import { type DockerfileLayout, type EngineRuntimeMode, generateDockerfile } from './dockerfile.js';
import { GraphConfigError } from './graph-config-error.js';
import { readLangGraphConfigFile } from './langgraph-config.js';

export interface DockerfileCommandOptions {
  /** Path to langgraph.json, relative to `cwd`. */
  readonly config: string;
  /** Where to write the Dockerfile; stdout when absent. */
  readonly output?: string;
  readonly addDockerCompose?: boolean;
  readonly baseImage?: string;
  readonly apiVersion?: string;
  readonly engineRuntimeMode?: EngineRuntimeMode;
  readonly layout?: DockerfileLayout;
}

export interface CommandIo {
  readonly cwd: string;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

/** Throws GraphConfigError for problems with the configuration or the options. */
export async function runDockerfileCommand(options: DockerfileCommandOptions, io: CommandIo): Promise<void> {
  if (options.addDockerCompose && !options.output) {
    throw new GraphConfigError('--add-docker-compose writes files beside the Dockerfile: name the Dockerfile to write (OUTPUT)');
  }
  const configPath = await realConfigPath(path.resolve(io.cwd, options.config), options.config);
  const config = await readLangGraphConfigFile(configPath, options.config);
  for (const field of config.unknownFields) io.stderr(`${options.config}: ignoring unknown field '${field}'\n`);

  const generated = await generateDockerfile(config, path.dirname(configPath), {
    ...(options.baseImage !== undefined && { baseImage: options.baseImage }),
    ...(options.apiVersion !== undefined && { apiVersion: options.apiVersion }),
    ...(options.engineRuntimeMode !== undefined && { engineRuntimeMode: options.engineRuntimeMode }),
    ...(options.layout !== undefined && { layout: options.layout }),
  });
  if (generated.layoutNote !== undefined) io.stderr(`Using the CLI's layout: ${generated.layoutNote}\n`);
  if (generated.additionalContexts.size > 0) {
    const flags = [...generated.additionalContexts].map(([name, dir]) => `--build-context ${name}=${dir}`).join(' ');
    io.stderr(`Dependencies outside the project directory: build with ${flags}\n`);
  }
  if (!options.output) {
    io.stdout(generated.dockerfile);
    return;
  }
  const output = path.resolve(io.cwd, options.output);
  await fs.writeFile(output, generated.dockerfile, 'utf8');
  io.stderr(`Created ${output}\n`);
  if (options.addDockerCompose) await writeComposeFiles(output, options.baseImage, io);
}

async function realConfigPath(configPath: string, written: string): Promise<string> {
  try {
    const real = await fs.realpath(configPath);
    if ((await fs.stat(real)).isFile()) return real;
  } catch {
    // reported below
  }
  throw new GraphConfigError(`${written}: no such file; pass the path of langgraph.json with -c`);
}

async function writeComposeFiles(dockerfilePath: string, baseImage: string | undefined, io: CommandIo): Promise<void> {
  const dir = path.dirname(dockerfilePath);
  await fs.writeFile(path.join(dir, '.dockerignore'), DOCKERIGNORE, 'utf8');
  await fs.writeFile(path.join(dir, 'docker-compose.yml'), composeFile(path.basename(dockerfilePath), baseImage), 'utf8');
  io.stderr(`Created ${path.join(dir, '.dockerignore')} and ${path.join(dir, 'docker-compose.yml')}\n`);
  // An existing .env holds the user's variables: never overwritten.
  try {
    await fs.writeFile(path.join(dir, '.env'), ENV_TEMPLATE, { encoding: 'utf8', flag: 'wx' });
    io.stderr(`Created ${path.join(dir, '.env')}\n`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    io.stderr(`Kept the existing ${path.join(dir, '.env')}\n`);
  }
}

export function registerDockerfileCommand(program: Command): void {
  program
    .command('dockerfile')
    .description("Write the Dockerfile of a LangGraph project, as the LangGraph CLI's `langgraph dockerfile` does.")
    .argument('[output]', 'file to write (default: print to stdout)')
    .option('-c, --config <path>', 'path to langgraph.json', 'langgraph.json')
    .option('--add-docker-compose', 'also write docker-compose.yml, .dockerignore and .env beside OUTPUT')
    .option('--base-image <image>', "base image without tag (default: the config's base_image, else the CLI's image)")
    .option('--api-version <version>', 'agent server version of the base image, e.g. 0.4')
    .addOption(
      new Option('--engine-runtime-mode <mode>', 'distributed uses the executor image for Python')
        .choices(['combined_queue_worker', 'distributed'])
        .default('combined_queue_worker'),
    )
    .addOption(
      new Option('--layout <layout>', "cli: the CLI's Dockerfile; cached: install from the manifests first (JavaScript)")
        .choices(['cli', 'cached'])
        .default('cli'),
    )
    .action(async (output: string | undefined, flags: Omit<DockerfileCommandOptions, 'output'>) => {
      const io: CommandIo = {
        cwd: process.cwd(),
        stdout: (text) => process.stdout.write(text),
        stderr: (text) => process.stderr.write(text),
      };
      try {
        await runDockerfileCommand({ ...flags, ...(output !== undefined && { output }) }, io);
      } catch (error) {
        // A configuration problem is the user's to fix (exit 2, as a usage error); anything
        // else (a file that cannot be written) is reported as it is.
        const usage = error instanceof GraphConfigError;
        process.stderr.write(`${usage ? '' : 'berth dockerfile: '}${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = usage ? 2 : 1;
      }
    });
}
