/**
 * Isolation: for every operation of /openapi.json (new routes are covered without editing
 * this file), requests with another workspace's key or another organization's key, aimed
 * at this workspace's resources, answer 404 or 403 — exactly as for resources that do not
 * exist — and change nothing of this workspace. Secrets and API keys never reach the logs
 * of the whole run, nor any table in plain text.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { createRepository, type TempDir, tempDir } from '../test/support/git-repos.js';
import { type Client, client } from '../test/support/http.js';
import { eventually } from '../test/support/runtimes.js';
import { startTestServer, type TestServer } from '../test/support/server.js';
import { EXAMPLE_BODIES, exampleRepository, SECRET_MARKER, secretValue } from './examples.js';
import { valueFor } from './arbitraries.js';
import { disableSubscription, insertDeliveries } from '../src/store/repositories/webhooks.js';
import { allRows, databasesToTest, encodeURIComponentSafe, type Operation, operationsOf, type RawResponse, sendRaw, tableNames, textCells } from './support.js';
import { describeEachDatabase } from '../test/support/database.js';

/** Routes of organization-wide resources: any key of the organization may use them by design. */
const ORGANIZATION_ROUTES = ['/v2/auth/providers', '/v1/workspaces', '/v1/api-keys'];
/** Routes that show admin keys the organization's own records beside the workspace's (the audit log's key and workspace rows). */
const ORGANIZATION_VIEWS_FOR_ADMINS = ['/v1/audit-log'];
/**
 * Routes that act on the caller's own key only (its dashboard sessions): no workspace is
 * resolved, so a tenant header reaches nothing; they must still change and show nothing of the victim's.
 */
const OWN_KEY_ROUTES = ['/v1/sessions'];

interface Attacker {
  name: string;
  headers: Record<string, string>;
  /** Same organization as the victim workspace (organization routes are then legitimately open to it). */
  sameOrganization: boolean;
  role: 'admin' | 'member';
  /** Names the victim workspace in X-Tenant-Id. */
  namesVictimWorkspace: boolean;
}

describeEachDatabase(
  'isolation between workspaces and organizations',
  (kind) => {
    let server: TestServer;
    let api: Client;
    let operations: Operation[];
    const ids = {
      workspace: '',
      organization: '',
      deployments: [] as string[],
      revisions: [] as string[],
      listener: '',
      provider: '',
      providerRowId: '',
      victimKey: '',
      integration: '',
      subscription: '',
      delivery: '',
    };
    let repositories: TempDir | undefined;
    /** Every secret value and plain API key of the run: none may reach logs or tables. */
    const secrets = new Set<string>();
    /** The victim's own secrets (the attackers' requests carry theirs, which they may see). */
    const victimSecrets = new Set<string>();
    const attackers: Attacker[] = [];

    const body = (name: string) => {
      const make = EXAMPLE_BODIES[name];
      if (!make) throw new Error(`no example body for ${name}: add one to test-reliability/examples.ts`);
      return make();
    };
    const collectSecrets = (text: string | undefined) => {
      for (const match of text?.match(new RegExp(`${SECRET_MARKER}-[0-9a-f-]{36}`, 'g')) ?? []) secrets.add(match);
    };

    before(async () => {
      // Everything the server logs, at the most verbose level, is kept for the log check.
      const previousLevel = process.env.TEST_LOG_LEVEL;
      process.env.TEST_LOG_LEVEL = 'trace';
      server = await startTestServer(kind, { limits: { rateLimitPerMinute: 0 } });
      if (previousLevel === undefined) delete process.env.TEST_LOG_LEVEL;
      else process.env.TEST_LOG_LEVEL = previousLevel;
      api = client(server.url, { key: server.adminKey });
      secrets.add(server.adminKey);
      ids.workspace = server.workspaceId;
      ids.organization = server.organizationId;
      operations = await operationsOf(server.url);

      // The victim workspace: deployments that really run (with secrets in their environment),
      // one waiting on a listener, a code-host one that builds, a provider and a spare key.
      const image = body('POST /v2/deployments');
      collectSecrets(JSON.stringify(image));
      const d1 = await api('POST', '/v2/deployments', { body: image });
      assert.equal(d1.status, 201, d1.text);
      const patch = {
        secrets: [
          { name: 'API_TOKEN', value: secretValue() },
          { name: 'OTHER', value: secretValue() },
        ],
      };
      collectSecrets(JSON.stringify(patch));
      assert.equal((await api('PATCH', `/v2/deployments/${d1.body.id}`, { body: patch })).status, 200);
      repositories = await tempDir('berth-isolation-');
      exampleRepository.path = (await createRepository(repositories.path)).bare;
      const integrationBody = body('POST /v1/integrations/codehost');
      collectSecrets(JSON.stringify(integrationBody));
      const integration = await api('POST', '/v1/integrations/codehost', { body: integrationBody });
      assert.equal(integration.status, 201, integration.text);
      const [repository] = (await api('GET', `/v1/integrations/codehost/${integration.body.id}/repos`)).body as { url: string }[];
      assert.ok(repository, 'the victim integration lists its repository');
      ids.integration = integration.body.id;
      const code = {
        name: `iso-code-${Date.now()}`,
        source: 'github',
        source_config: { integration_id: integration.body.id, repo_url: repository.url },
        source_revision_config: { repo_ref: 'main' },
        secrets: [{ name: 'BUILD_TOKEN', value: secretValue() }],
      };
      collectSecrets(JSON.stringify(code));
      const d3 = await api('POST', '/v2/deployments', { body: code });
      assert.equal(d3.status, 201, d3.text);
      const listener = await api('POST', '/v2/listeners', { body: body('POST /v2/listeners') });
      assert.equal(listener.status, 201, listener.text);
      const placed = { ...body('POST /v2/deployments'), source_config: { listener_id: listener.body.id } };
      collectSecrets(JSON.stringify(placed));
      const d2 = await api('POST', '/v2/deployments', { body: placed });
      assert.equal(d2.status, 201, d2.text);
      const provider = body('POST /v2/auth/providers');
      collectSecrets(JSON.stringify(provider));
      const p = await api('POST', '/v2/auth/providers', { body: provider });
      assert.equal(p.status, 200, p.text);
      const victimKey = await api('POST', '/v1/api-keys', { body: { name: 'victim', workspace_id: ids.workspace } });
      assert.equal(victimKey.status, 201);
      secrets.add(victimKey.body.key);
      // A webhook subscription with a delivery, disabled so that nothing is ever sent (its URL is a public address, no DNS).
      const subscription = await api('POST', '/v1/webhook-subscriptions', { body: body('POST /v1/webhook-subscriptions') });
      assert.equal(subscription.status, 201, subscription.text);
      secrets.add(subscription.body.secret);
      const deliveryId = randomUUID();
      const now = new Date().toISOString();
      await insertDeliveries(server.berth.db, [
        {
          id: deliveryId,
          subscription_id: subscription.body.id,
          event_id: randomUUID(),
          event_type: 'listener.offline',
          body: '{}',
          state: 'failed',
          attempts: 0,
          created_at: now,
          next_attempt_at: null,
          leased_until: null,
          last_status_code: null,
          last_error: null,
          redelivery_of: null,
        },
      ]);
      await disableSubscription(server.berth.db, subscription.body.id, now, 'isolation fixture');
      Object.assign(ids, {
        listener: listener.body.id,
        provider: p.body.provider_id,
        providerRowId: p.body.id,
        victimKey: victimKey.body.id,
        subscription: subscription.body.id,
        delivery: deliveryId,
      });
      ids.deployments = [d1.body.id, d2.body.id, d3.body.id];

      // Let the engine finish: the first and third deploy, the second waits for its listener.
      await eventually(
        async () => {
          const states = await Promise.all(
            ids.deployments.map(async (id) => (await api('GET', `/v2/deployments/${id}/revisions?limit=100`)).body.resources as { status: string }[]),
          );
          const done = (rs: { status: string }[]) => rs.every((r) => ['DEPLOYED', 'SKIPPED', 'DEPLOY_FAILED', 'BUILD_FAILED'].includes(r.status));
          const leased = await server.berth.db.selectFrom('deployments').select('id').where('lease_owner', 'is not', null).execute();
          return (
            done(states[0] as never) && done(states[2] as never) && (states[1] as { status: string }[])[0]?.status === 'AWAITING_DEPLOY' && leased.length === 0
          );
        },
        'the victim workspace to settle',
        30_000,
      );
      const d1Revisions = (await api('GET', `/v2/deployments/${d1.body.id}/revisions`)).body.resources as { id: string; status: string }[];
      assert.equal(d1Revisions[0]?.status, 'DEPLOYED', 'the image deployment runs its latest revision');
      ids.revisions = (await server.berth.db.selectFrom('revisions').select('id').where('deployment_id', 'in', ids.deployments).execute()).map((r) => r.id);

      for (const secret of secrets) victimSecrets.add(secret);

      // The attackers: keys of another workspace of the same organization, and of another organization.
      const workspaceB = await api('POST', '/v1/workspaces', { body: { name: `other-${Date.now()}` } });
      const memberB = await api('POST', '/v1/api-keys', { body: { name: 'member-b', workspace_id: workspaceB.body.id, role: 'member' } });
      const adminB = await api('POST', '/v1/api-keys', { body: { name: 'admin-b', workspace_id: workspaceB.body.id, role: 'admin' } });
      const orgC = await server.berth.services.tenancy.createOrganization(`other-org-${Date.now()}`);
      assert.ok(orgC);
      const unboundC = await client(server.url, { key: orgC.apiKey })('POST', '/v1/api-keys', {
        body: { name: 'unbound-c', workspace_id: null, role: 'admin' },
      });
      assert.equal(unboundC.status, 201);
      for (const key of [memberB.body.key, adminB.body.key, orgC.apiKey, unboundC.body.key]) secrets.add(key);
      const victim = { 'x-tenant-id': ids.workspace };
      attackers.push(
        {
          name: 'member key of another workspace',
          headers: { 'x-api-key': memberB.body.key },
          sameOrganization: true,
          role: 'member',
          namesVictimWorkspace: false,
        },
        {
          name: 'admin key of another workspace',
          headers: { 'x-api-key': adminB.body.key },
          sameOrganization: true,
          role: 'admin',
          namesVictimWorkspace: false,
        },
        {
          name: 'member key of another workspace + X-Tenant-Id',
          headers: { 'x-api-key': memberB.body.key, ...victim },
          sameOrganization: true,
          role: 'member',
          namesVictimWorkspace: true,
        },
        {
          name: 'admin key of another workspace + X-Tenant-Id',
          headers: { authorization: `Bearer ${adminB.body.key}`, ...victim },
          sameOrganization: true,
          role: 'admin',
          namesVictimWorkspace: true,
        },
        {
          name: 'admin key of another organization',
          headers: { 'x-api-key': orgC.apiKey },
          sameOrganization: false,
          role: 'admin',
          namesVictimWorkspace: false,
        },
        {
          name: 'admin key of another organization as bearer',
          headers: { authorization: `Bearer ${orgC.apiKey}` },
          sameOrganization: false,
          role: 'admin',
          namesVictimWorkspace: false,
        },
        {
          name: 'admin key of another organization + X-Tenant-Id',
          headers: { 'x-api-key': orgC.apiKey, ...victim },
          sameOrganization: false,
          role: 'admin',
          namesVictimWorkspace: true,
        },
        {
          name: 'unbound key of another organization + X-Tenant-Id',
          headers: { 'x-api-key': unboundC.body.key, ...victim },
          sameOrganization: false,
          role: 'admin',
          namesVictimWorkspace: true,
        },
        {
          name: 'unbound key of another organization',
          headers: { 'x-api-key': unboundC.body.key },
          sameOrganization: false,
          role: 'admin',
          namesVictimWorkspace: false,
        },
      );
    });
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await server?.close();
      await repositories?.remove();
    };
    after(close);

    /** The victim's rows of every table (rows of other tenants may change: attackers act in their own). */
    async function victimState(): Promise<Record<string, string[]>> {
      const deployments = new Set(ids.deployments);
      const revisions = new Set(ids.revisions);
      const victimNames = new Set(
        (await server.berth.db.selectFrom('deployments').select(['id', 'name']).execute()).filter((row) => deployments.has(row.id)).map((row) => row.name),
      );
      const secretSets = new Set(
        (await server.berth.db.selectFrom('secret_sets').select(['id', 'deployment_id']).execute())
          .filter((set) => deployments.has(set.deployment_id))
          .map((set) => set.id),
      );
      const victimKeys = new Set(
        (await server.berth.db.selectFrom('api_keys').select(['id', 'organization_id', 'workspace_id']).execute())
          .filter((row) => row.organization_id === ids.organization && (row.workspace_id === ids.workspace || row.workspace_id === null))
          .map((row) => row.id),
      );
      const ours: Record<string, (row: Record<string, unknown>) => boolean> = {
        organizations: (r) => r.id === ids.organization,
        workspaces: (r) => r.organization_id === ids.organization,
        // A listener key belongs to its listener's workspace (another workspace may make listeners of its own).
        api_keys: (r) => r.organization_id === ids.organization && (r.listener_id == null || r.workspace_id === ids.workspace),
        oauth_providers: (r) => r.organization_id === ids.organization,
        listeners: (r) => r.workspace_id === ids.workspace,
        // Runner labels the victim's workspace and listener require.
        runner_label_requirements: (r) => r.organization_id === ids.organization,
        deployments: (r) => r.workspace_id === ids.workspace,
        revisions: (r) => deployments.has(r.deployment_id as string),
        resource_specs: (r) => deployments.has(r.deployment_id as string),
        secret_sets: (r) => deployments.has(r.deployment_id as string),
        secret_set_entries: (r) => secretSets.has(r.set_id as string),
        codehost_integrations: (r) => r.workspace_id === ids.workspace,
        codehost_branch_heads: (r) => r.integration_id === ids.integration,
        codehost_deliveries: (r) => r.integration_id === ids.integration,
        deployment_events: (r) => deployments.has(r.deployment_id as string),
        // The name search index (SQLite): one entry per deployment, with its name.
        deployment_search_keys: (r) => deployments.has(r.deployment_id as string),
        deployment_name_search: (r) => victimNames.has(r.name as string),
        engine_step_runs: (r) => revisions.has(r.revision_id as string),
        // The engine's round-robin turn and image removals are per workspace.
        engine_turns: (r) => r.workspace_id === ids.workspace,
        image_removals: (r) => r.workspace_id === ids.workspace,
        // The victim workspace's audit rows and its organization's own (attackers' rows land in their own workspace or organization).
        audit_log: (r) => r.organization_id === ids.organization && (r.workspace_id === ids.workspace || r.workspace_id == null),
        // Sessions are their key's: attackers sign in with their own keys.
        sessions: (r) => victimKeys.has(r.key_id as string),
        webhook_subscriptions: (r) => r.workspace_id === ids.workspace,
        webhook_events: (r) => r.workspace_id === ids.workspace,
        webhook_deliveries: (r) => r.subscription_id === ids.subscription,
        webhook_attempts: (r) => r.delivery_id === ids.delivery,
      };
      const state: Record<string, string[]> = {};
      for (const table of await tableNames(server.berth.db)) {
        if (table.startsWith('kysely_migration')) continue;
        // FTS5's own storage behind deployment_name_search, whose rows are compared above.
        if (table.startsWith('deployment_name_search_')) continue;
        // A table this suite does not know yet is compared whole.
        const mine = ours[table] ?? (() => true);
        state[table] = (await allRows(server.berth.db, table))
          .filter(mine)
          .map((row) => JSON.stringify(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))))
          .sort();
      }
      return state;
    }

    function difference(before: Record<string, string[]>, after: Record<string, string[]>): string | undefined {
      for (const table of Object.keys({ ...before, ...after })) {
        const was = new Set(before[table] ?? []);
        const now = new Set(after[table] ?? []);
        const added = [...now].filter((row) => !was.has(row));
        const removed = [...was].filter((row) => !now.has(row));
        if (added.length || removed.length) return `${table}: +${added.length} -${removed.length} rows, e.g. ${(added[0] ?? removed[0] ?? '').slice(0, 300)}`;
      }
      return undefined;
    }

    /** Path, query and body that are valid for the operation, so a request gets past validation. */
    function requestFor(op: Operation, values: Record<string, string>): { path: string; body?: string } {
      const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
        const value = values[name];
        if (value === undefined) throw new Error(`${op.method} ${op.path}: no victim resource for path parameter '${name}'; add one to isolation.test.ts`);
        return value;
      });
      const query = op.query
        .filter((q) => q.required)
        .map((q) => `${q.name}=${encodeURIComponentSafe(String(q.schema.enum?.[0] ?? q.schema.default ?? fc.sample(valueFor(q.schema), 1)[0]))}`);
      let payload: string | undefined;
      if (op.body) {
        const example = EXAMPLE_BODIES[`${op.method} ${op.path}`];
        if (!example) throw new Error(`${op.method} ${op.path}: no example body; add one to test-reliability/examples.ts`);
        payload = JSON.stringify(example());
        collectSecrets(payload);
      }
      return { path: `${path}${query.length ? `?${query.join('&')}` : ''}`, body: payload };
    }

    test('every route: other workspaces and organizations get 404 or 403, as for absent resources, and change nothing', async () => {
      // The victim's ids, in answers to others, would be a leak.
      const victimIds = [ids.workspace, ...ids.deployments, ...ids.revisions, ids.listener, ids.providerRowId, ids.victimKey, ids.integration];
      // Revision ids must belong to the deployment in the path.
      const d1Revision = (
        await server.berth.db
          .selectFrom('revisions')
          .select('id')
          .where('deployment_id', '=', ids.deployments[0] as string)
          .execute()
      )[0]?.id as string;
      const values = {
        deployment_id: ids.deployments[0] as string,
        revision_id: d1Revision,
        listener_id: ids.listener,
        workspace_id: ids.workspace,
        provider_id: ids.provider,
        key_id: ids.victimKey,
        integration_id: ids.integration,
        subscription_id: ids.subscription,
        delivery_id: ids.delivery,
        // The runner routes refuse every key but a runner key before any lookup (403 role_forbids);
        // test/runners/ tries a runner key of another organization on a real job.
        job_id: randomUUID(),
      };
      const problems: string[] = [];
      let baseline = await victimState();
      let requests = 0;
      const routes = operations.filter((op) => !(op.security && op.security.length === 0));
      assert.ok(routes.length >= 25, `the OpenAPI document lists the API's routes (${routes.length})`);

      for (const op of routes) {
        const organizationRoute = ORGANIZATION_ROUTES.some((prefix) => op.path.startsWith(prefix));
        // OAuth provider writes need an admin key too.
        const adminRoute = op.tags.includes('admin') || (op.path.startsWith('/v2/auth/providers') && op.method !== 'GET');
        for (const [i, attacker] of attackers.entries()) {
          // Organization resources are open to every key of the organization (admin ones to admin keys).
          if (organizationRoute && attacker.sameOrganization && !(adminRoute && attacker.role === 'member')) continue;
          if (ORGANIZATION_VIEWS_FOR_ADMINS.includes(op.path) && attacker.sameOrganization && attacker.role === 'admin') continue;
          // An admin key may act in any workspace of its organization by naming it.
          if (!organizationRoute && attacker.sameOrganization && attacker.role === 'admin' && attacker.namesVictimWorkspace) continue;
          const prefix = i % 2 === 0 ? '' : '/api-host';
          const request = requestFor(op, values);
          const headers = { ...attacker.headers, ...(request.body ? { 'content-type': 'application/json' } : {}) };
          const res = await sendRaw(server.url, { method: op.method, path: prefix + request.path, headers, body: request.body });
          requests += 1;
          const what = `${op.method} ${op.path} with ${attacker.name}`;
          const ownKeyRoute = OWN_KEY_ROUTES.some((prefix) => op.path.startsWith(prefix));
          const targetsVictim =
            !ownKeyRoute && (op.pathParams.length > 0 || (attacker.namesVictimWorkspace && !organizationRoute) || (adminRoute && attacker.sameOrganization));
          if (targetsVictim && res.status !== 403 && res.status !== 404) {
            problems.push(`${what}: answered ${res.status}, not 404/403: ${res.text.slice(0, 300)}`);
          } else if (res.status >= 500) {
            problems.push(`${what}: answered ${res.status}: ${res.text.slice(0, 300)}`);
          }
          // The answer may repeat what the caller sent (an id in the path, the tenant header); nothing else of the victim's.
          const sent = `${request.path} ${JSON.stringify(headers)} ${request.body ?? ''}`;
          const leaked = [...victimIds, ...victimSecrets].find((value) => value && res.text.includes(value) && !sent.includes(value));
          if (leaked) problems.push(`${what}: the answer (${res.status}) contains the victim's ${leaked}: ${res.text.slice(0, 200)}`);
          if (res.status === 404 && op.pathParams.length > 0) {
            const absent = await absentAnswer(op, prefix, headers);
            const normalise = (r: RawResponse, path: string) =>
              `${r.status} ${path
                .split('?')[0]
                ?.split('/')
                .reduce((text, segment) => (segment ? text.split(segment).join('<seg>') : text), r.text)}`;
            if (normalise(res, request.path) !== normalise(absent.res, absent.path)) {
              problems.push(
                `${what}: answers unlike an absent resource: ${res.status} ${res.text.slice(0, 200)} vs ${absent.res.status} ${absent.res.text.slice(0, 200)}`,
              );
            }
          }
          const now = await victimState();
          const changed = difference(baseline, now);
          if (changed) {
            problems.push(`${what} (answered ${res.status}) changed the victim's data: ${changed}`);
            baseline = now;
          }
        }
      }

      // Control: the same requests with the victim's own key reach the resources (so the 404s above mean something).
      // Build jobs are no workspace's: only runner keys reach them (test/runners/ has their control).
      for (const op of routes.filter((o) => o.method === 'GET' && o.pathParams.length > 0 && !o.path.startsWith('/v1/runner/'))) {
        const request = requestFor(op, values);
        const res = await sendRaw(server.url, { method: 'GET', path: request.path, headers: { 'x-api-key': server.adminKey } });
        if (res.status !== 200)
          problems.push(`control: ${op.method} ${op.path} with the workspace's own key answered ${res.status}: ${res.text.slice(0, 200)}`);
      }
      assert.deepEqual(problems, [], `${problems.length} isolation problems in ${requests} requests`);

      async function absentAnswer(op: Operation, prefix: string, headers: Record<string, string>) {
        const absent = {
          deployment_id: randomUUID(),
          revision_id: randomUUID(),
          listener_id: randomUUID(),
          workspace_id: randomUUID(),
          provider_id: `absent-${Date.now()}`,
          key_id: randomUUID(),
          integration_id: randomUUID(),
          subscription_id: randomUUID(),
          delivery_id: randomUUID(),
          job_id: randomUUID(),
        };
        const request = requestFor(op, absent);
        return { res: await sendRaw(server.url, { method: op.method, path: prefix + request.path, headers, body: request.body }), path: request.path };
      }
    });

    test('no secret value or API key appears in the database in plain text', async () => {
      const cells = await textCells(server.berth.db);
      assert.ok(cells.length > 50, 'the tables hold data');
      const found: string[] = [];
      for (const secret of secrets) {
        for (const cell of cells) if (cell.value.includes(secret)) found.push(`${cell.table}.${cell.column} holds ${secret.slice(0, 12)}…`);
      }
      assert.deepEqual(found, []);
      // Stored secrets are ciphertexts, keys are digests.
      const stored = await server.berth.db.selectFrom('secret_set_entries').select('value_encrypted').execute();
      assert.ok(stored.length > 0 && stored.every((r) => r.value_encrypted.startsWith('v1:')));
      const keys = await server.berth.db.selectFrom('api_keys').select('key_hash').execute();
      assert.ok(keys.every((k) => /^[0-9a-f]{64}$/.test(k.key_hash)));
    });

    test('no secret value or API key appears in the logs of the whole run', async () => {
      // Secrets through every path the logs could see: a 422 that quotes a body, a bad tenant
      // header, a wrong key, a bearer key, a key in a query string the client should not send.
      const probe = secretValue();
      secrets.add(probe);
      await api('PATCH', `/v2/deployments/${ids.deployments[0]}`, { body: { secrets: [{ name: 'bad name!', value: probe }] } });
      await api('POST', '/v2/deployments', { rawBody: `{"name":"x","secrets":[{"name":"A","value":"${probe}"}]` });
      await api('POST', '/v2/auth/providers', { body: { ...body('POST /v2/auth/providers'), auth_url: 'not a url', client_secret: probe } });
      await client(server.url)('GET', '/v2/deployments', { headers: { authorization: `Bearer ${server.adminKey}x` } });
      await client(server.url)('GET', '/v2/deployments', { key: `${server.adminKey}-wrong` });
      await client(server.url)('GET', '/v2/deployments', { headers: { authorization: `Bearer ${server.adminKey}` } });
      await close();
      const logs = server.logs.join('');
      assert.ok(logs.length > 10_000, `the run was logged (${logs.length} characters)`);
      assert.equal(server.berth.app.log.level, 'trace', 'the server logged at its most verbose level');
      const leaked = [...secrets].filter((secret) => logs.includes(secret));
      assert.deepEqual(
        leaked.map((s) => `${s.slice(0, 14)}…`),
        [],
        `${leaked.length} of ${secrets.size} secrets and keys appear in the logs`,
      );
      // Keys that were wrong by a suffix still must not be logged whole.
      assert.ok(!logs.includes(`${server.adminKey}-wrong`) && !logs.includes(`${server.adminKey}x`));
    });
  },
  { kinds: databasesToTest() },
);
