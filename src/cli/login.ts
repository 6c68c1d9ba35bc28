/** `berth login`: checks a URL and key against Berth and saves them as a profile (mode 0600). */
import type { Command } from 'commander';
import { createBerthClient } from '../client/index.js';
import { saveProfile } from './config.js';
import { CliExit, EXIT } from './io.js';
import { action, type CliContext } from './shared.js';

export function registerLoginCommand(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('login')
    .description('Check a Berth URL and API key and save them as a profile for the other commands (the key is read from BERTH_API_KEY or --api-key).')
    .option('--url <url>', 'Berth URL (default: BERTH_URL)')
    .option('--api-key <key>', 'API key (default: BERTH_API_KEY; flags show in the process list)')
    .option('--tenant-id <id>', 'workspace id, for admin keys (default: BERTH_TENANT_ID)')
    .option('--profile <name>', 'profile name', 'default')
    .action(
      action(context, async (options) => {
        const url = options.url ?? io.env.BERTH_URL?.trim();
        const apiKey = options.apiKey ?? io.env.BERTH_API_KEY?.trim();
        const tenantId = options.tenantId ?? (io.env.BERTH_TENANT_ID?.trim() || undefined);
        if (!url) throw new CliExit(EXIT.usage, 'login needs the Berth URL', 'pass --url or set BERTH_URL');
        if (!apiKey) throw new CliExit(EXIT.usage, 'login needs an API key', 'set BERTH_API_KEY (or pass --api-key)');
        // One cheap authenticated read proves the URL, the key and the workspace.
        await createBerthClient({ baseUrl: url, apiKey, tenantId }).deployments.list({ limit: 1 });
        const file = saveProfile(io.env, options.profile ?? 'default', { url, apiKey, ...(tenantId ? { tenantId } : {}) });
        io.err(`logged in to ${url}; profile "${options.profile}" saved in ${file}\n`);
      }),
    );
}
