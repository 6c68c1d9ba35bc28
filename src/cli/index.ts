/**
 * The `berth` client commands: resources, `deploy`, `login` and `completion`. Every call to
 * Berth goes through the typed client (src/client). main.ts adds them beside `serve`.
 */
import { Command, CommanderError } from 'commander';
import { registerCompletionCommand } from './completion.js';
import { registerDeployCommand } from './deploy.js';
import { EXIT, type CliIo } from './io.js';
import { registerLoginCommand } from './login.js';
import { registerResourceCommands } from './resources.js';
import { registerRollbackCommands } from './rollback.js';
import type { CliContext } from './shared.js';

export { processIo } from './io.js';

/** Adds the client commands to `program`; `exit` receives each command's exit code. */
export function registerClientCommands(program: Command, io: CliIo, exit: (code: number) => void): void {
  const context: CliContext = { io, exit };
  registerDeployCommand(program, context);
  registerResourceCommands(program, context);
  registerRollbackCommands(program, context);
  registerLoginCommand(program, context);
  registerCompletionCommand(program, context);
}

/** The exit code for an error commander threw under `exitOverride()`: help is 0, bad usage 3. */
export function usageExitCode(error: CommanderError): number {
  return error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.help' || error.code === 'commander.version'
    ? EXIT.ok
    : EXIT.usage;
}

/** Runs the client commands in this process (for tests and embedding): answers the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let code: number = EXIT.ok;
  const program = new Command('berth').exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
  registerClientCommands(program, io, (exitCode) => (code = exitCode));
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return usageExitCode(error);
    throw error;
  }
  return code;
}
