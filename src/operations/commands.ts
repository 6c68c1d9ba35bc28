// `berth backup <file>` and `berth rotate-encryption-key`: maintenance of a Berth's data,
// configured from the same environment as the server (BERTH_DATA_DIR, DATABASE_URL,
// BERTH_ENCRYPTION_KEY). Messages go to stderr; no key is ever printed.
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { OperationError } from './errors.js';
import type { RotationReport } from './rotate-encryption-key.js';

const say = (text: string) => process.stderr.write(`${text}\n`);

/** Exit 2 for configuration problems, 1 for an operation that could not be done. */
async function runOperation(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    const known = error instanceof OperationError || error instanceof ConfigError;
    say(`berth ${name}: ${error instanceof Error ? error.message : String(error)}`);
    if (!known && error instanceof Error && error.stack) say(error.stack);
    process.exitCode = error instanceof ConfigError ? 2 : 1;
  }
}

export function registerOperationsCommands(program: Command): void {
  program
    .command('backup')
    .description('Copy the SQLite database to FILE, consistently, while the server runs (for PostgreSQL it prints the pg_dump command to use).')
    .argument('<file>', 'the backup file to write')
    .option('--force', 'replace FILE if it exists')
    .action((file: string, flags: { force?: boolean }) =>
      runOperation('backup', async () => {
        const config = loadConfig();
        // Imported by the command that needs it: with the store, every `berth` command would load it otherwise.
        const { backupDatabase } = await import('./backup.js');
        const result = await backupDatabase(config.database, file, { overwrite: flags.force });
        say(`Backed up ${config.database.kind === 'sqlite' ? config.database.file : 'the database'} to ${result.file} (${result.bytes} bytes).`);
        say("Secrets in it are encrypted: keep the encryption key (BERTH_ENCRYPTION_KEY or the data directory's encryption.key) with it, in another place.");
      }),
    );

  program
    .command('rotate-encryption-key')
    .description(
      'Re-encrypt every stored secret with a new encryption key (BERTH_NEW_ENCRYPTION_KEY, or a generated one), then put the new key in place. ' +
        'Stop every Berth server and engine first.',
    )
    .option('--allow-other-sessions', 'PostgreSQL: go on although other sessions are connected (only when none of them is Berth)')
    .action((flags: { allowOtherSessions?: boolean }) =>
      runOperation('rotate-encryption-key', async () => {
        const config = loadConfig();
        const { rotateEncryptionKey } = await import('./rotate-encryption-key.js');
        const report = await rotateEncryptionKey(config, {
          newKey: config.newEncryptionKey,
          allowOtherSessions: flags.allowOtherSessions,
          progress: (name, rows) => say(`re-encrypted ${name}: ${rows} row(s)`),
        });
        for (const line of nextSteps(report)) say(line);
      }),
    );
}

function nextSteps(report: RotationReport): string[] {
  if (report.keyFile) {
    return [
      `The new key is in ${report.keyFile}; Berth uses it from its next start.`,
      `The old key is kept in ${report.previousKeyFile} for backups taken before now: delete it once none is needed.`,
    ];
  }
  const where = report.newKeyFile ? `the key in ${report.newKeyFile} (then delete that file)` : 'the value of BERTH_NEW_ENCRYPTION_KEY';
  return [`Set BERTH_ENCRYPTION_KEY to ${where} on every Berth server and engine before starting them: the old key no longer opens the secrets.`];
}
