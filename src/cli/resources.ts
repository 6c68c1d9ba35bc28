/** The resource commands: deployments, revisions, listeners, OAuth providers, integrations, workspaces, API keys, webhooks, the audit log. */
import { type Command, Option } from 'commander';
import { type BerthClient, isTerminal } from '../client/index.js';
import { CliExit, EXIT, type CliIo } from './io.js';
import { type Column, render } from './output.js';
import {
  action,
  bodyFrom,
  type CliContext,
  clientFor,
  repeatable,
  connected,
  deploymentIdOf,
  type Options,
  parseSecrets,
  readable,
  withBody,
} from './shared.js';

const DEPLOYMENT_COLUMNS: Column[] = [
  ['ID', (d) => d.id],
  ['NAME', (d) => d.name],
  ['STATUS', (d) => d.status],
  ['IMAGE', (d) => d.source_revision_config?.image_uri ?? d.source_config?.repo_url],
  ['LATEST REVISION', (d) => d.latest_revision_id],
  ['URL', (d) => d.url],
];
const PREVIEW_COLUMNS: Column[] = [
  ['ID', (d) => d.id],
  ['NAME', (d) => d.name],
  ['STATUS', (d) => d.status],
  ['PARENT', (d) => d.parent_deployment_id],
  ['PULL REQUEST', (d) => d.preview?.pull_request_number],
  ['BRANCH', (d) => d.preview?.branch],
  ['HEAD', (d) => d.preview?.head_sha?.slice(0, 12)],
  ['URL', (d) => d.url],
];
const REVISION_COLUMNS: Column[] = [
  ['ID', (r) => r.id],
  ['#', (r) => r.revision_number],
  ['STATUS', (r) => r.status],
  ['CREATED', (r) => r.created_at],
  ['MESSAGE', (r) => r.status_message],
];
const LISTENER_COLUMNS: Column[] = [
  ['ID', (l) => l.id],
  ['COMPUTE ID', (l) => l.compute_id],
  ['NAMESPACES', (l) => l.compute_config?.k8s_namespaces?.join(',')],
  ['VERSION', (l) => l.version],
];
const PROVIDER_COLUMNS: Column[] = [
  ['ID', (p) => p.id],
  ['PROVIDER ID', (p) => p.provider_id],
  ['NAME', (p) => p.name],
  ['CLIENT ID', (p) => p.client_id],
];
const INTEGRATION_COLUMNS: Column[] = [
  ['ID', (i) => i.id],
  ['NAME', (i) => i.name],
  ['INSTALLATION', (i) => i.installation_id],
];
const REPOSITORY_COLUMNS: Column[] = [
  ['NAME', (r) => `${r.owner}/${r.name}`],
  ['DEFAULT BRANCH', (r) => r.default_branch],
  ['URL', (r) => r.url],
];
const SUBSCRIPTION_COLUMNS: Column[] = [
  ['ID', (s) => s.id],
  ['URL', (s) => s.url],
  ['EVENTS', (s) => s.events?.join(',')],
  ['ENABLED', (s) => s.enabled],
  ['DISABLED REASON', (s) => s.disabled_reason],
];
const DELIVERY_COLUMNS: Column[] = [
  ['ID', (d) => d.id],
  ['EVENT', (d) => d.event_type],
  ['STATE', (d) => d.state],
  ['ATTEMPTS', (d) => d.attempts?.length],
  ['LAST STATUS', (d) => d.attempts?.at(-1)?.status_code ?? d.attempts?.at(-1)?.error],
  ['CREATED', (d) => d.created_at],
];
/** The event types a subscription may ask for (as the server's schema lists them). */
const SUBSCRIBABLE = [
  'revision.status_changed',
  'deployment.created',
  'deployment.deleted',
  'listener.offline',
  'preview.created',
  'preview.updated',
  'preview.deleted',
  'preview.*',
];
const WORKSPACE_COLUMNS: Column[] = [
  ['ID', (w) => w.id],
  ['NAME', (w) => w.name],
  ['CREATED', (w) => w.created_at],
];
const AUDIT_COLUMNS: Column[] = [
  ['TIME', (e) => e.created_at],
  ['ACTOR', (e) => (e.actor.type === 'berth' ? 'berth' : e.actor.key_name)],
  ['ROLE', (e) => e.actor.role],
  ['ACTION', (e) => e.action],
  ['TARGET', (e) => `${e.target.type} ${e.target.name ?? e.target.id}`],
  ['FIELDS', (e) => [...e.changed_fields, ...e.secret_names.map((name: string) => `secret:${name}`)].join(',')],
];
const KEY_COLUMNS: Column[] = [
  ['ID', (k) => k.id],
  ['NAME', (k) => k.name],
  ['ROLE', (k) => k.role],
  ['WORKSPACE', (k) => k.workspace_id],
  ['DEPLOYMENTS', (k) => (k.deployment_ids ?? []).join(',')],
  ['HINT', (k) => k.key_hint],
];

/** `previews` of a PATCH from the `--preview…` options; undefined when none is given. */
function previewSettingsOf(options: Options): Record<string, unknown> | undefined {
  const settings: Record<string, unknown> = {};
  if (options.previews) settings.enabled = options.previews === 'on';
  if (options.previewLabel) Object.assign(settings, { trigger: 'label', label: options.previewLabel });
  if (options.previewBranches) settings.branch_pattern = options.previewBranches;
  if (options.previewSecret) settings.secret_names = options.previewSecret;
  if (options.previewMax !== undefined) settings.max_previews = options.previewMax;
  if (options.previewIdleMinutes !== undefined) settings.idle_minutes = options.previewIdleMinutes;
  return Object.keys(settings).length > 0 ? settings : undefined;
}

/** A deployment as a table shows it: secret names, never their values. */
function withoutSecretValues<T extends { secrets?: { name: string }[] }>(deployment: T, format: string | undefined): T {
  return format === 'table' ? { ...deployment, secrets: (deployment.secrets ?? []).map((secret) => secret.name) as never } : deployment;
}

async function collect<T>(client: BerthClient, fetchPage: (page: { offset: number; limit: number }) => Promise<{ resources: T[]; offset: number }>) {
  const all: T[] = [];
  for await (const page of client.pages(fetchPage)) all.push(...page);
  return all;
}

function done(io: CliIo, text: string): void {
  io.err(`${text}\n`);
}

export function registerResourceCommands(program: Command, context: CliContext): void {
  const { io } = context;
  const client = (options: Options) => clientFor(io, options);

  // Deployments.
  const deployments = program.command('deployments').alias('deployment').description('Create, list, read, change and delete deployments.');
  readable(deployments.command('list').description('List the deployments of the workspace (every page).'))
    .option('--name-contains <text>', 'only deployments whose name contains this')
    .option('--previews', 'only preview deployments, with their pull request or branch')
    .option('--previews-of <deployment>', 'only the previews of this deployment (id or name)')
    .action(
      action(context, async (options) => {
        const berth = client(options);
        const parent = options.previewsOf ? await deploymentIdOf(berth, options.previewsOf as string) : undefined;
        const previewsOnly = Boolean(options.previews) || parent !== undefined;
        const rows = await collect(berth, (page) =>
          berth.deployments.list({
            ...page,
            ...(options.nameContains ? { name_contains: options.nameContains } : {}),
            ...(previewsOnly ? { is_preview: true } : {}),
            ...(parent ? { parent_deployment_id: parent } : {}),
          }),
        );
        render(io, options.output!, rows, previewsOnly ? PREVIEW_COLUMNS : DEPLOYMENT_COLUMNS);
      }),
    );
  readable(deployments.command('get').description('Show one deployment.').argument('<deployment>', 'deployment id or name')).action(
    action(context, async (options, reference) => {
      const berth = client(options);
      const deployment = await berth.deployments.get(await deploymentIdOf(berth, reference!));
      render(io, options.output!, withoutSecretValues(deployment, options.output), DEPLOYMENT_COLUMNS);
    }),
  );
  withBody(readable(deployments.command('create').description('Create a deployment (an external image; other sources through --data/--file).')))
    .option('--name <name>', 'deployment name')
    .option('--image <ref>', 'container image to run (source external_docker)')
    .option('--secret <NAME=VALUE>', 'secret environment variable (repeatable)', repeatable)
    .option('--listener <id>', 'listener that runs the deployment')
    .action(
      action(context, async (options) => {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- user-given JSON and commander options are untyped
        const body = bodyFrom(options) as Record<string, any>;
        if (options.name) body.name = options.name;
        if (options.image) {
          body.source ??= 'external_docker';
          body.source_revision_config = { ...body.source_revision_config, image_uri: options.image };
        }
        if (options.listener) body.source_config = { ...body.source_config, listener_id: options.listener };
        body.secrets = parseSecrets(io, options.secret) ?? body.secrets ?? [];
        body.source_config ??= {};
        body.source_revision_config ??= {};
        if (!body.name) throw new CliExit(EXIT.usage, 'a deployment needs a name', 'pass --name');
        const created = await client(options).deployments.create(body as never);
        render(io, options.output!, withoutSecretValues(created, options.output), DEPLOYMENT_COLUMNS);
      }),
    );
  withBody(readable(deployments.command('update').description('Change a deployment (a new revision when the image, secrets or resources change).')))
    .argument('<deployment>', 'deployment id or name')
    .option('--image <ref>', 'new container image')
    .option('--secret <NAME=VALUE>', 'secret environment variable (repeatable; replaces the list)', repeatable)
    .option('--display-name <text>', 'display name')
    .addOption(new Option('--previews <state>', 'preview deployments of pull requests (github) or branches (git)').choices(['on', 'off']))
    .option('--preview-label <label>', 'only pull requests with this label get previews (without it: every pull request)')
    .option('--preview-branches <pattern>', 'git integrations: branches that get previews (`*` within a segment, `**` across)')
    .option('--preview-secret <NAME>', 'a secret of this deployment previews get (repeatable; replaces the list)', repeatable)
    .option('--preview-max <n>', 'previews at once', Number)
    .option('--preview-idle-minutes <n>', 'a preview with no new commit for this long is removed', Number)
    .action(
      action(context, async (options, reference) => {
        const berth = client(options);
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- user-given JSON and commander options are untyped
        const body = bodyFrom(options) as Record<string, any>;
        if (options.image) body.source_revision_config = { ...body.source_revision_config, image_uri: options.image };
        const secrets = parseSecrets(io, options.secret);
        if (secrets) body.secrets = secrets;
        if (options.displayName) body.display_name = options.displayName;
        const previews = previewSettingsOf(options);
        if (previews) body.previews = { ...body.previews, ...previews };
        const updated = await berth.deployments.update(await deploymentIdOf(berth, reference!), body as never);
        render(io, options.output!, withoutSecretValues(updated, options.output), DEPLOYMENT_COLUMNS);
      }),
    );
  connected(deployments.command('delete').description('Delete a deployment.').argument('<deployment>', 'deployment id or name')).action(
    action(context, async (options, reference) => {
      const berth = client(options);
      const id = await deploymentIdOf(berth, reference!);
      await berth.deployments.delete(id);
      done(io, `deleted deployment ${id}`);
    }),
  );

  // Revisions.
  const revisions = program.command('revisions').alias('revision').description("Read a deployment's revisions and their logs; redeploy or interrupt one.");
  readable(revisions.command('list').description('List the revisions of a deployment, newest first.').argument('<deployment>', 'deployment id or name')).action(
    action(context, async (options, reference) => {
      const berth = client(options);
      const id = await deploymentIdOf(berth, reference!);
      render(io, options.output!, await collect(berth, (page) => berth.revisions.list(id, page)), REVISION_COLUMNS);
    }),
  );
  readable(revisions.command('get').description('Show one revision.').argument('<deployment>', 'deployment id or name').argument('<revision>', 'revision id'))
    .option('--wait <seconds>', 'wait up to this long for the revision to be terminal (long poll)', Number)
    .action(
      action(context, async (options, reference, revisionId) => {
        const berth = client(options);
        const id = await deploymentIdOf(berth, reference!);
        const revision = options.wait
          ? await berth.waitForRevision(id, revisionId!, { timeoutSeconds: options.wait })
          : await berth.revisions.get(id, revisionId!);
        render(io, options.output!, revision, REVISION_COLUMNS);
      }),
    );
  connected(
    revisions
      .command('logs')
      .description("Print a revision's build and deploy logs.")
      .argument('<deployment>', 'deployment id or name')
      .argument('<revision>', 'revision id'),
  )
    .addOption(new Option('--type <type>', 'only build or deploy logs').choices(['build', 'deploy']))
    .option('-f, --follow', 'keep printing new lines until the revision is terminal (event stream)')
    .action(
      action(context, async (options, reference, revisionId) => {
        const berth = client(options);
        const id = await deploymentIdOf(berth, reference!);
        if (options.follow) return followLogs(berth, io, id, revisionId!, options.type);
        for (const type of options.type ? [options.type as 'build' | 'deploy'] : (['build', 'deploy'] as const)) {
          let offset: string | undefined;
          do {
            const page = await berth.revisions.logs(id, revisionId!, { type, order: 'asc', limit: 1000, ...(offset ? { offset } : {}) });
            for (const line of page.logs) io.out(`${new Date(line.timestamp).toISOString()} ${type} ${line.level} ${line.message}\n`);
            offset = page.next_offset ?? undefined;
          } while (offset);
        }
      }),
    );
  connected(
    revisions
      .command('redeploy')
      .description('Deploy a revision again.')
      .argument('<deployment>', 'deployment id or name')
      .argument('<revision>', 'revision id'),
  ).action(
    action(context, async (options, reference, revisionId) => {
      const berth = client(options);
      const deployment = await berth.revisions.redeploy(await deploymentIdOf(berth, reference!), revisionId!);
      done(io, `redeploying revision ${revisionId} as revision ${deployment.latest_revision_id}`);
    }),
  );
  connected(
    revisions
      .command('interrupt')
      .description('Interrupt a revision that is not terminal yet.')
      .argument('<deployment>', 'deployment id or name')
      .argument('<revision>', 'revision id'),
  ).action(
    action(context, async (options, reference, revisionId) => {
      const berth = client(options);
      await berth.revisions.interrupt(await deploymentIdOf(berth, reference!), revisionId!);
      done(io, `interrupted revision ${revisionId}`);
    }),
  );

  // Listeners.
  const listeners = program.command('listeners').description('Listeners: Kubernetes clusters or container hosts that run deployments.');
  readable(listeners.command('list').description('List listeners.')).action(
    action(context, async (options) => {
      const berth = client(options);
      render(io, options.output!, await collect(berth, (page) => berth.listeners.list(page)), LISTENER_COLUMNS);
    }),
  );
  readable(listeners.command('get').description('Show one listener.').argument('<listener>', 'listener id')).action(
    action(context, async (options, id) => render(io, options.output!, await client(options).listeners.get(id!), LISTENER_COLUMNS)),
  );
  withBody(readable(listeners.command('create').description('Register a listener.')))
    .option('--compute-id <id>', 'cluster name, unique in the workspace')
    .option('--namespace <name>', 'Kubernetes namespace (repeatable)', repeatable)
    .action(
      action(context, async (options) => {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- user-given JSON and commander options are untyped
        const body = bodyFrom(options) as Record<string, any>;
        body.compute_type ??= 'k8s';
        if (options.computeId) body.compute_id = options.computeId;
        if (options.namespace) body.compute_config = { ...body.compute_config, k8s_namespaces: options.namespace };
        body.compute_config ??= {};
        render(io, options.output!, await client(options).listeners.create(body as never), LISTENER_COLUMNS);
      }),
    );
  withBody(readable(listeners.command('update').description('Change a listener.').argument('<listener>', 'listener id'))).action(
    action(context, async (options, id) =>
      render(io, options.output!, await client(options).listeners.update(id!, bodyFrom(options) as never), LISTENER_COLUMNS),
    ),
  );
  connected(listeners.command('delete').description('Delete a listener.').argument('<listener>', 'listener id')).action(
    action(context, async (options, id) => {
      await client(options).listeners.delete(id!);
      done(io, `deleted listener ${id}`);
    }),
  );

  // OAuth providers.
  const providers = program.command('oauth-providers').description('OAuth providers of the organization (writes need an admin key).');
  readable(providers.command('list').description('List OAuth providers.')).action(
    action(context, async (options) => render(io, options.output!, await client(options).oauthProviders.list(), PROVIDER_COLUMNS)),
  );
  readable(providers.command('get').description('Show one OAuth provider.').argument('<provider>', 'the provider_id chosen at creation')).action(
    action(context, async (options, id) => render(io, options.output!, await client(options).oauthProviders.get(id!), PROVIDER_COLUMNS)),
  );
  withBody(
    readable(providers.command('create').description('Create an OAuth provider (body: provider_id, name, client_id, client_secret, auth_url, token_url).')),
  ).action(
    action(context, async (options) => render(io, options.output!, await client(options).oauthProviders.create(bodyFrom(options) as never), PROVIDER_COLUMNS)),
  );
  withBody(readable(providers.command('update').description('Change an OAuth provider.').argument('<provider>', 'the provider_id chosen at creation'))).action(
    action(context, async (options, id) =>
      render(io, options.output!, await client(options).oauthProviders.update(id!, bodyFrom(options) as never), PROVIDER_COLUMNS),
    ),
  );
  connected(providers.command('delete').description('Delete an OAuth provider.').argument('<provider>', 'the provider_id chosen at creation')).action(
    action(context, async (options, id) => {
      await client(options).oauthProviders.delete(id!);
      done(io, `deleted OAuth provider ${id}`);
    }),
  );

  // Integrations and their repositories.
  const integrations = program.command('integrations').description('Code-host integrations (git, GitHub) and their repositories.');
  readable(integrations.command('list').description('List integrations.')).action(
    action(context, async (options) => render(io, options.output!, await client(options).integrations.list(), INTEGRATION_COLUMNS)),
  );
  readable(integrations.command('get').description('Show one integration.').argument('<integration>', 'integration id')).action(
    action(context, async (options, id) => render(io, options.output!, await client(options).integrations.get(id!), INTEGRATION_COLUMNS)),
  );
  withBody(readable(integrations.command('create').description('Create an integration (body: provider, name, and git or github settings).'))).action(
    action(context, async (options) => render(io, options.output!, await client(options).integrations.create(bodyFrom(options) as never), INTEGRATION_COLUMNS)),
  );
  connected(integrations.command('delete').description('Delete an integration.').argument('<integration>', 'integration id')).action(
    action(context, async (options, id) => {
      await client(options).integrations.delete(id!);
      done(io, `deleted integration ${id}`);
    }),
  );
  readable(integrations.command('repos').description("List an integration's repositories.").argument('<integration>', 'integration id')).action(
    action(context, async (options, id) => render(io, options.output!, await client(options).integrations.repositories(id!), REPOSITORY_COLUMNS)),
  );

  // Workspaces.
  const workspaces = program.command('workspaces').description('Workspaces of the organization (admin keys).');
  readable(workspaces.command('list').description('List workspaces.')).action(
    action(context, async (options) => render(io, options.output!, await client(options).workspaces.list(), WORKSPACE_COLUMNS)),
  );
  readable(workspaces.command('create').description('Create a workspace.'))
    .requiredOption('--name <name>', 'workspace name')
    .action(
      action(context, async (options) => render(io, options.output!, await client(options).workspaces.create({ name: options.name }), WORKSPACE_COLUMNS)),
    );

  // API keys.
  const keys = program.command('api-keys').description('API keys of the organization (admin keys).');
  readable(keys.command('list').description('List API keys (their hints, never the keys).')).action(
    action(context, async (options) => render(io, options.output!, await client(options).apiKeys.list(), KEY_COLUMNS)),
  );
  connected(keys.command('create').description('Create an API key and print it once, alone on stdout.'))
    .requiredOption('--name <name>', 'key name')
    .addOption(
      new Option('--role <role>', 'role: read_only reads only; deployer only ships the deployments given with --deployment')
        .choices(['member', 'admin', 'read_only', 'deployer'])
        .default('member'),
    )
    .option('--workspace <id>', 'bind the key to this workspace (required for a deployer key)')
    .option('--deployment <id>', 'for a deployer key: a deployment it may act on (repeatable)', (id: string, ids: string[] = []) => [...ids, id])
    .action(
      action(context, async (options) => {
        const created = await client(options).apiKeys.create({
          name: options.name,
          role: options.role,
          ...(options.workspace ? { workspace_id: options.workspace } : {}),
          ...(options.deployment ? { deployment_ids: options.deployment } : {}),
        });
        io.err(`created API key ${created.id} (${created.key_hint}); it is shown only now:\n`);
        io.out(`${created.key}\n`);
      }),
    );
  connected(keys.command('revoke').description('Revoke an API key.').argument('<key>', 'key id')).action(
    action(context, async (options, id) => {
      await client(options).apiKeys.revoke(id!);
      done(io, `revoked API key ${id}`);
    }),
  );

  // Outbound webhooks (docs/webhooks.md).
  const webhooks = program.command('webhooks').description('Outbound webhook subscriptions of the workspace and their deliveries (docs/webhooks.md).');
  readable(webhooks.command('list').description('List subscriptions (never their secrets).')).action(
    action(context, async (options) => render(io, options.output!, (await client(options).webhooks.list({ limit: 100 })).resources, SUBSCRIPTION_COLUMNS)),
  );
  connected(webhooks.command('create').description('Subscribe a URL to events and print the signing secret once, alone on stdout.'))
    .requiredOption('--endpoint <url>', 'where deliveries are POSTed (http or https)')
    .requiredOption('--event <type>', `an event to send (repeatable): ${SUBSCRIBABLE.join(', ')}`, repeatable)
    .option('--description <text>', 'what the subscription is for')
    .action(
      action(context, async (options) => {
        const created = await client(options).webhooks.create({
          url: options.endpoint as string,
          events: options.event,
          ...(options.description ? { description: options.description } : {}),
        });
        io.err(`created webhook subscription ${created.id}; its signing secret is shown only now:\n`);
        io.out(`${created.secret}\n`);
      }),
    );
  connected(webhooks.command('delete').description('Delete a subscription and its deliveries.').argument('<subscription>', 'subscription id')).action(
    action(context, async (options, id) => {
      await client(options).webhooks.delete(id!);
      done(io, `deleted webhook subscription ${id}`);
    }),
  );
  readable(webhooks.command('deliveries').description("List a subscription's deliveries, newest first.").argument('<subscription>', 'subscription id'))
    .option('--limit <n>', 'at most this many deliveries (1-100)', '20')
    .option('--offset <n>', 'skip this many deliveries (the offset of the previous page)', '0')
    .action(
      action(context, async (options, id) =>
        render(
          io,
          options.output!,
          (await client(options).webhooks.deliveries(id!, { limit: Number(options.limit), offset: Number(options.offset) })).resources,
          DELIVERY_COLUMNS,
        ),
      ),
    );
  readable(
    webhooks
      .command('redeliver')
      .description('Send a delivery again, as a new delivery of the same event.')
      .argument('<subscription>', 'subscription id')
      .argument('<delivery>', 'delivery id'),
  ).action(
    action(context, async (options, id, delivery) => render(io, options.output!, await client(options).webhooks.redeliver(id!, delivery!), DELIVERY_COLUMNS)),
  );

  // The audit log (admin and read-only keys).
  readable(program.command('audit').description('Show the audit log of the workspace, newest first (admin and read-only keys).'))
    .option('--actor <key-id>', 'only changes made with this API key, or `berth`: only those Berth made itself')
    .option('--action <action>', 'only this action, e.g. deployment.update')
    .option('--target <id>', 'only changes to this resource id')
    .option('--target-type <type>', 'only changes to this kind of resource, e.g. deployment')
    .option('--since <time>', 'only changes at or after this ISO 8601 time')
    .option('--until <time>', 'only changes before this ISO 8601 time')
    .option('--limit <n>', 'at most this many entries (1-100)', '50')
    .option('--offset <n>', 'skip this many entries (the offset of the previous page)', '0')
    .action(
      action(context, async (options) => {
        const query = {
          limit: Number(options.limit),
          offset: Number(options.offset),
          ...(options.actor ? { actor: options.actor } : {}),
          ...(options.action ? { action: options.action } : {}),
          ...(options.target ? { target_id: options.target } : {}),
          ...(options.targetType ? { target_type: options.targetType } : {}),
          ...(options.since ? { since: options.since } : {}),
          ...(options.until ? { until: options.until } : {}),
        };
        render(io, options.output!, (await client(options).audit.list(query)).resources, AUDIT_COLUMNS);
      }),
    );
}

/** Prints a revision's log lines from the event stream until the revision is terminal. */
async function followLogs(berth: BerthClient, io: CliIo, deploymentId: string, revisionId: string, type: string | undefined): Promise<number> {
  for await (const event of berth.followEvents(deploymentId)) {
    if (event.data.revision_id !== revisionId) continue;
    if (event.event === 'log' && (!type || event.data.type === type)) {
      io.out(`${new Date(event.data.timestamp).toISOString()} ${event.data.type} ${event.data.level} ${event.data.message}\n`);
    }
    if (event.event === 'status' && isTerminal(event.data.status)) {
      io.err(`revision ${revisionId} is ${event.data.status}\n`);
      return event.data.status === 'DEPLOYED' ? EXIT.ok : EXIT.failed;
    }
  }
  return EXIT.ok;
}
