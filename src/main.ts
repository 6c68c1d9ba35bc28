import { Command, CommanderError } from 'commander';
import { processIo, registerClientCommands, usageExitCode } from './cli/index.js';
import { registerDockerfileCommand } from './langgraph-project/dockerfile-command.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { AgentConfigError, loadAgentConfig } from './agent/config.js';
import { loadRunnerConfig, RunnerConfigError, type RunnerFlags } from './runner/config.js';
import { KubernetesBuildConfigError } from './runner/kubernetes/config.js';
import { createLogger } from './logger.js';
import { endRunningTools } from './containers/commands.js';
import { registerOperationsCommands } from './operations/commands.js';
import { readyBanner, whereToGoNext } from './startup-guide.js';

// Each role's program (the server, the listener agent, the build runner, with the Kubernetes client some of
// them use) is imported by the command that runs it: every `berth` command, `--help` and the client commands
// included, would otherwise load all of them first, some 3,600 modules.

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

/** How long tool commands still running at a stop (a probe, an inspect) get to finish before they are killed. */
const TOOL_STOP_GRACE_MS = 2_000;

/**
 * Stops on SIGTERM/SIGINT: finishes requests in flight and pauses engine steps for another process to resume.
 * Handled from the first moment: a signal that comes while the role is still starting (the API answers
 * before the engine has started) stops it once started. Tool commands in flight while it starts,
 * and those still running once it has closed, are ended rather than left to outlive it.
 */
function stopOnSignals(logger: ReturnType<typeof createLogger>, started: Promise<{ close(): Promise<void> }>): void {
  let stopping = false;
  let ready = false;
  started.then(
    () => (ready = true),
    () => {},
  );
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error('shutdown took longer than 15 s; exiting');
      process.exit(1);
    }, 15_000);
    timer.unref();
    // A start held up by a tool that does not answer goes on once the tool is ended. Once
    // started, the role's own close waits for its commands (a step's cleanup among them).
    if (!ready) void endRunningTools(TOOL_STOP_GRACE_MS);
    const role = await started.catch(() => undefined);
    // A start that failed is reported, and the process ended, where it was awaited.
    if (!role) return;
    await role.close();
    await endRunningTools(TOOL_STOP_GRACE_MS);
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

// Under exitOverride commander throws instead of exiting, so bad usage ends with exit code 3
// (the client commands' "bad usage") and help with 0.
const program = new Command('berth').description('Berth: a self-hostable deployment control plane for agent servers.').exitOverride();

program
  .command('serve', { isDefault: true })
  .alias('server')
  .description('Run the API server (and, unless BERTH_ENGINE=off, the revision engine).')
  .action(async () => {
    const config = configOrExit();
    const logger = createLogger(config.logLevel, config.logFormat);
    const { startBerth } = await import('./server.js');
    const starting = startBerth(config, logger);
    stopOnSignals(logger, starting);
    const berth = await starting;
    const next = whereToGoNext(berth.address, config.dataDir);
    logger.info({ address: berth.address, database: config.database.kind, engine: config.engine.enabled, ...next }, 'berth is ready');
    if (logger.isLevelEnabled('info') && process.stdout.isTTY) process.stdout.write(readyBanner(next));
  });

program
  .command('engine')
  .description('Run only the revision engine, beside API servers on the same PostgreSQL.')
  .action(async () => {
    const config = configOrExit();
    const logger = createLogger(config.logLevel, config.logFormat);
    const { startEngineOnly } = await import('./server.js');
    const starting = startEngineOnly(config, logger);
    stopOnSignals(logger, starting);
    await starting;
    logger.info({ database: config.database.kind }, 'berth engine is running');
  });

program
  .command('listener')
  .description('Run deployments placed on a listener, with podman or docker on this machine or in a Kubernetes cluster (docs/listener-protocol.md).')
  .option('--url <url>', "Berth's base URL (else BERTH_URL)")
  .option('--data-dir <dir>', "the agent's local state (else BERTH_LISTENER_DATA_DIR, default ./berth-listener)")
  .option('--compute-type <type>', 'k8s, docker, podman or container (else BERTH_LISTENER_COMPUTE_TYPE, default container)')
  .option('--runtime <runtime>', 'container host: auto, podman or docker (else BERTH_LISTENER_RUNTIME)')
  .action(async (flags: { url?: string; dataDir?: string; runtime?: string; computeType?: string }) => {
    let config;
    try {
      config = loadAgentConfig(process.env, flags);
    } catch (error) {
      if (!(error instanceof AgentConfigError)) throw error;
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    const logger = createLogger(config.logLevel, 'auto');
    const [{ ListenerAgent }, { computeFor }] = await Promise.all([import('./agent/agent.js'), import('./agent/computes.js')]);
    const agent = new ListenerAgent(config, computeFor(config.compute), logger);
    // What runs keeps running: it belongs to the deployments, not to the agent.
    stopOnSignals(logger, Promise.resolve({ close: () => agent.stop() }));
    await agent.run();
    logger.info('berth listener stopped');
  });

program
  .command('builder')
  .description('Run builds for a Berth control plane started with BERTH_BUILDER=runners, on this machine (docs/build-runners.md).')
  .option('--url <url>', "Berth's base URL (else BERTH_URL)")
  .option('--data-dir <dir>', "the runner's working directory: mirrors, build directories (else BERTH_RUNNER_DATA_DIR, default ./berth-builder)")
  .option('--labels <labels>', "comma-separated labels to advertise (else BERTH_RUNNER_LABELS; default: the key's)")
  .option('--concurrency <n>', 'builds at once (else BERTH_RUNNER_CONCURRENCY, default 1)')
  .option('--health-port <port>', 'serve GET /healthz and GET /metrics (Prometheus) on this port (else BERTH_RUNNER_HEALTH_PORT; default off)')
  .option('--executor <kind>', 'local: build on this machine; kubernetes: each build a Job (else BERTH_BUILDER_EXECUTOR, default local)')
  .action(async (flags: RunnerFlags & { executor?: string }) => {
    let config;
    let driverFor;
    const { executorDriverFor } = await import('./runner/kubernetes/choose.js');
    try {
      config = loadRunnerConfig(process.env, flags);
      driverFor = executorDriverFor(process.env, flags.executor);
    } catch (error) {
      if (!(error instanceof RunnerConfigError) && !(error instanceof KubernetesBuildConfigError)) throw error;
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    const local = !driverFor;
    if (local) {
      // A build on this machine runs in the build sandbox, which needs root: a host that cannot provide it is refused here.
      try {
        const { langGraphDriverFor, prepareRunnerSandbox } = await import('./runner/local-build.js');
        driverFor = langGraphDriverFor(config, await prepareRunnerSandbox(config));
      } catch (error) {
        if (!(error instanceof RunnerConfigError)) throw error;
        process.stderr.write(`${error.message}\n`);
        process.exit(2);
      }
    }
    const logger = createLogger(config.logLevel, 'auto');
    if (local && !config.sandbox) logger.warn('BERTH_BUILD_SANDBOX=off: builds run unconfined, as this process; only for a machine whose only user is you');
    const { BuildRunner } = await import('./runner/runner.js');
    const runner = new BuildRunner(config, logger, driverFor);
    const ran = runner.run();
    stopOnSignals(
      logger,
      Promise.resolve({
        async close() {
          runner.stop();
          await ran;
        },
      }),
    );
    await ran;
    logger.info('berth builder stopped');
  });

program
  .command('builder-pod', { hidden: true })
  .description("What a build Job's pod runs (berth builder --executor kubernetes): builds the job in its Secret's file.")
  .requiredOption('--job <file>', "the job, from the Job's Secret")
  .requiredOption('--work-dir <dir>', 'sources and the image store')
  .action(async (flags: { job: string; workDir: string }) => {
    const stop = new AbortController();
    process.once('SIGTERM', () => stop.abort());
    const { buildInPod } = await import('./runner/kubernetes/in-pod.js');
    process.exitCode = await buildInPod(flags.job, flags.workDir, process.stdout, stop.signal);
  });

registerDockerfileCommand(program);
registerOperationsCommands(program);

registerClientCommands(program, processIo(), (code) => {
  process.exitCode = code;
});

program.parseAsync().catch((error) => {
  if (error instanceof CommanderError) process.exit(usageExitCode(error));
  process.stderr.write(`berth failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
