import { after, before } from 'node:test';
import { describeEachDatabase } from './database.js';
import { type Client, client } from './http.js';
import { startTestServer, type TestServer, type TestServerOptions } from './server.js';

export interface SuiteContext {
  server: TestServer;
  /** Client with the bootstrap admin key (bound to the default workspace). */
  api: Client;
  /** Client with no key at all. */
  anonymous: Client;
}

type Body = (ctx: () => SuiteContext) => void;

/**
 * Runs the same suite against SQLite and PostgreSQL, each with its own fresh server.
 * PostgreSQL suites skip, saying why, only when no PostgreSQL server is there. `options`
 * are the servers' (`{ engine: false }` for a suite in which only its tests write).
 */
export function describeOnEachDatabase(name: string, ...args: [body: Body] | [options: TestServerOptions, body: Body]): void {
  const [options, body] = args.length === 1 ? [{}, args[0]] : args;
  describeEachDatabase(name, (kind) => {
    let context: SuiteContext | undefined;
    before(async () => {
      const server = await startTestServer(kind, options);
      context = { server, api: client(server.url, { key: server.adminKey }), anonymous: client(server.url) };
    });
    after(async () => {
      await context?.server.close();
    });
    body(() => {
      if (!context) throw new Error('suite context used before setup');
      return context;
    });
  });
}

/**
 * Keys for the security cases every route gets: a second workspace of the same
 * organization (bound key) and a second organization (its own admin key).
 */
export async function otherTenants(ctx: SuiteContext) {
  const { server, api } = ctx;
  const workspace = await api('POST', '/v1/workspaces', { body: { name: `other-${Date.now()}-${Math.random()}` } });
  const otherWorkspaceKey = await api('POST', '/v1/api-keys', { body: { name: 'other-ws', workspace_id: workspace.body.id } });
  const org = await server.berth.services.tenancy.createOrganization(`org-${Date.now()}-${Math.random()}`);
  if (!org) throw new Error('could not create a second organization');
  return {
    otherWorkspaceId: workspace.body.id as string,
    otherWorkspaceKey: otherWorkspaceKey.body.key as string,
    otherOrganizationKey: org.apiKey,
    otherOrganizationWorkspaceId: org.workspaceId,
  };
}
