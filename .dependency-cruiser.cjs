/**
 * The layers of docs/architecture.md, checked on every `npm test`. Each rule names what a
 * layer may NOT reach; "infrastructure" is the adapters around the core (security, events,
 * codehost, langgraph-project, image-builds, sources, registry, provisioning, observability, containers, sandbox, locks, outbound).
 */
const layer = (name) => `^src/${name}/`;
const only = (...names) => `^src/(?!(${names.join('|')})/)`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'Modules form no import cycles at run time (types may refer to each other: they are gone once compiled).',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'domain/ holds the rules: it imports nothing of ours outside itself.',
      from: { path: layer('domain') },
      to: { path: '^src/', pathNot: layer('domain') },
    },
    {
      name: 'contract-is-wire-shapes',
      severity: 'error',
      comment: 'contract/ is what the server, SDK, CLI and dashboard share: wire shapes over domain values only.',
      from: { path: layer('contract') },
      to: { path: only('contract', 'domain') },
    },
    {
      name: 'store-below-services',
      severity: 'error',
      comment: 'store/ reads and writes rows: it imports the domain (and the Config type), nothing above it.',
      from: { path: layer('store') },
      to: { path: '^src/', pathNot: ['^src/(store|domain)/', '^src/config\\.ts$', '^src/environment\\.ts$'] },
    },
    {
      name: 'lifecycle-is-the-status-writer',
      severity: 'error',
      comment: 'lifecycle/ moves statuses through the store and announces them; it knows no use case, route or driver.',
      from: { path: layer('lifecycle') },
      to: { path: only('lifecycle', 'domain', 'store', 'events') },
    },
    {
      name: 'services-below-http',
      severity: 'error',
      comment: 'Use cases know nothing of HTTP, the engine or the agents.',
      from: { path: layer('services') },
      to: { path: '^src/(http|engine|agent|operations)/|^src/(server|main)\\.ts$' },
    },
    {
      name: 'engine-beside-services',
      severity: 'error',
      comment: 'The engine works through the store and the lifecycle with its drivers; it calls no use case and no route.',
      from: { path: layer('engine') },
      to: { path: '^src/(http|services|operations)/|^src/(server|main)\\.ts$' },
    },
    {
      name: 'http-is-thin',
      severity: 'error',
      comment: 'Routes parse, authorize, call a use case and shape the answer: no SQL, no lifecycle, no engine.',
      from: { path: layer('http') },
      to: { path: '^src/(store|lifecycle|engine|agent|operations)/' },
    },
    {
      name: 'infrastructure-below-use-cases',
      severity: 'error',
      comment: 'Adapters serve the layers above them and never call back up.',
      from: {
        path: '^src/(security|events|codehost|kubernetes|langgraph-project|image-builds|sources|registry|provisioning|observability|containers|sandbox|locks|outbound)/',
      },
      to: { path: '^src/(http|services|engine|lifecycle|operations)/|^src/(server|main)\\.ts$' },
    },
    {
      name: 'config-is-the-bottom',
      severity: 'error',
      comment:
        'The settings are read by every layer, so they read only the environment schema, the domain (BERTH_REGISTRY is parsed by domain/registry-location.ts for that reason) and the schema code cache (a leaf, which validates the environment as it does the routes).',
      from: { path: '^src/(config|environment)\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/domain/', '^src/(config|environment|schema-code-cache)\\.ts$'] },
    },
    {
      name: 'schema-code-cache-is-a-leaf',
      severity: 'error',
      comment: 'The settings, the routes and the langgraph.json reader load their validators through it, so it imports nothing of Berth.',
      from: { path: '^src/schema-code-cache\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'operations-are-maintenance',
      severity: 'error',
      comment:
        'Backups and key rotation run alone with the database: they use the store, security and the settings, never a use case, a route, the engine or the agent (the associated data of a ciphertext lives in security/, beside its encryption, for both writers).',
      from: { path: layer('operations') },
      to: { path: '^src/(http|services|engine|lifecycle|agent|cli|client)/|^src/(server|main)\\.ts$' },
    },
    {
      name: 'agent-speaks-the-protocol',
      severity: 'error',
      comment:
        "agent/ is `berth listener`, the agent of the listener protocol, a process of its own on another machine: it knows Berth only through the wire shapes of contract/ and the domain, and runs containers with the container tools' local runtime (containers/), the one the engine uses; never the store, the use cases, the engine or the server.",
      from: { path: layer('agent') },
      to: { path: '^src/', pathNot: ['^src/(agent|contract|domain|containers|kubernetes)/'] },
    },
    {
      name: 'agent-is-its-own-process',
      severity: 'error',
      comment: 'Only the command line starts the agent; the server, the engine and the use cases never call into it.',
      from: { path: '^src/', pathNot: ['^src/agent/', '^src/main\\.ts$'] },
      to: { path: layer('agent') },
    },
    {
      name: 'runner-speaks-the-protocol',
      severity: 'error',
      comment:
        "runner/ is `berth builder`, a process of its own on another machine: it knows Berth only through contract/ and the domain, and builds with the build adapters (langgraph-project/, image-builds/, sources/, sandbox/, codehost/) through the engine's LangGraph build driver and the driver types (runner.ts, job.ts): never the store, the use cases or the server.",
      from: { path: layer('runner') },
      to: {
        path: '^src/',
        pathNot: [
          '^src/(runner|contract|domain|langgraph-project|image-builds|sources|sandbox|codehost|containers|kubernetes)/',
          '^src/engine/drivers/(types|langgraph-build)\\.ts$',
        ],
      },
    },
    {
      name: 'runner-is-its-own-process',
      severity: 'error',
      comment: 'Only the command line starts the build runner.',
      from: { path: '^src/', pathNot: ['^src/runner/', '^src/main\\.ts$'] },
      to: { path: layer('runner') },
    },
    {
      name: 'client-stands-alone',
      severity: 'error',
      comment: 'client/ is the published typed client: it speaks to Berth over HTTP only, from its generated schema.',
      from: { path: layer('client') },
      to: { path: '^src/', pathNot: layer('client') },
    },
    {
      name: 'dashboard-speaks-http',
      comment:
        'dashboard/ runs in the browser: it reaches Berth through the typed client only, with types and rules of contract/ and domain/; nothing of the server runs there.',
      severity: 'error',
      from: { path: layer('dashboard') },
      to: { path: '^src/', pathNot: '^src/(dashboard|client|contract|domain)/' },
    },
    {
      name: 'nothing-imports-the-dashboard',
      comment: 'The server serves the built dashboard as files (http/dashboard.ts); no server code imports its sources.',
      severity: 'error',
      from: { path: '^src/', pathNot: layer('dashboard') },
      to: { path: layer('dashboard') },
    },
    {
      name: 'cli-through-the-client',
      severity: 'error',
      comment: 'cli/ calls Berth only through the typed client, never the server code.',
      from: { path: layer('cli') },
      to: { path: '^src/', pathNot: ['^src/(cli|client)/'] },
    },
    {
      name: 'no-test-code-in-src',
      severity: 'error',
      comment: 'Test support (stand-ins, in-process drivers) never ships.',
      from: { path: '^src/' },
      to: { path: '^(test|test-reliability|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
