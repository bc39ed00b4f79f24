// Import boundaries of the architecture (README: Architecture), checked by `npm run boundaries`
// (part of `npm test`). No exceptions are recorded: a violation fails.
const WORKSPACE = '^((?:apps|packages|plugins)/[^/]+)/';
// What one workspace may import of another: its published entry points (package.json "exports").
const ENTRY_POINTS = [
  '^(apps|packages|plugins)/[^/]+/src/index\\.ts$',
  '^apps/agent/src/testing\\.ts$',
  '^apps/console/src/build\\.ts$',
  '^apps/server/test/support/testing\\.ts$',
  '^packages/contracts/src/fixtures\\.ts$',
  '^packages/plugin-kit/src/testing/index\\.ts$',
  '^plugins/enforcer-opendxl-tie/test/testing\\.ts$',
  // The plugin's definition alone (schema, lazy create): what the agent's registry loads at start.
  '^plugins/enforcer-opendxl-tie/src/definition\\.ts$',
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'workspace-internals',
      severity: 'error',
      comment: 'A workspace reaches another only through its published entry points (package.json exports).',
      from: { path: WORKSPACE },
      to: { path: '^(apps|packages|plugins)/', pathNot: ['^$1/', ...ENTRY_POINTS] },
    },
    {
      name: 'root-tests-through-entry-points',
      severity: 'error',
      comment: 'End-to-end and cross-workspace tests under test/ use the workspaces\' entry points only.',
      from: { path: '^test/' },
      to: { path: '^(apps|packages|plugins)/', pathNot: ENTRY_POINTS },
    },
    {
      name: 'plugins-not-apps-or-plugins',
      severity: 'error',
      comment: 'A plugin builds on plugin-kit and contracts only: never on an app or another plugin.',
      from: { path: '^plugins/([^/]+)/' },
      to: { path: ['^apps/', '^plugins/'], pathNot: '^plugins/$1/' },
    },
    {
      name: 'packages-not-apps-or-plugins',
      severity: 'error',
      comment: 'Shared packages (contracts, scoring, client, plugin-kit) import no app and no plugin.',
      from: { path: '^packages/' },
      to: { path: ['^apps/', '^plugins/'] },
    },
    {
      name: 'store-below-services',
      severity: 'error',
      comment: 'The store is the bottom layer of the server: it imports neither services nor routes.',
      from: { path: '^apps/server/src/store/' },
      to: { path: '^apps/server/src/(services|routes|plugins|sync)/' },
    },
    {
      name: 'services-below-routes',
      severity: 'error',
      comment: 'Services do not import routes.',
      from: { path: '^apps/server/src/services/' },
      to: { path: '^apps/server/src/routes/' },
    },
    {
      name: 'services-below-fastify-plugins',
      severity: 'error',
      comment: 'Services do not reach up into the fastify plugins (auth, metrics, …), not even for a type: who is calling is plugins/principal.ts, which imports nothing of fastify.',
      from: { path: '^apps/server/src/services/' },
      to: { path: '^apps/server/src/plugins/', pathNot: '^apps/server/src/plugins/principal\\.ts$' },
    },
    {
      name: 'routes-through-services',
      severity: 'error',
      comment: 'Routes call services and the Store handed in through AppContext: they import nothing of store/, not even a type.',
      from: { path: '^apps/server/src/routes/' },
      to: { path: '^apps/server/src/store/' },
    },
    {
      name: 'sql-only-in-store',
      severity: 'error',
      comment: 'The database handle behind a Store (sql-handle.ts) is the store\'s own; tests may seed and inspect through it.',
      from: { path: '^apps/server/src/', pathNot: '^apps/server/src/store/' },
      to: { path: '^apps/server/src/store/(sql-handle|pg-driver|pglite-driver)\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles.',
      from: {},
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '/dist/', '^apps/console/public/'] },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.mjs', '.js', '.cjs', '.json'],
    },
  },
};
