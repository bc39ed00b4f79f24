import { defineConfig } from 'vitest/config';

// Coverage floors per workspace (v8, statements/branches/functions/lines of src/): they may only
// rise. A workspace without a floor has not been given one yet; the agent's came first.
const floors: Record<string, { statements: number; branches: number; functions: number; lines: number }> = {
  'apps/agent/src/**': { statements: 66, branches: 58, functions: 58, lines: 68 },
  'packages/contracts/src/**': { statements: 87, branches: 53, functions: 66, lines: 90 },
  'packages/client/src/**': { statements: 68, branches: 62, functions: 56, lines: 71 },
  'packages/scoring/src/**': { statements: 56, branches: 37, functions: 52, lines: 66 },
};

export default defineConfig({
  test: {
    include: ['{apps,packages,plugins}/*/{src,test}/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time: most tests wait on databases, servers, kernels and browsers, and vitest's
    // default on a 2-core machine (one worker) ran the suite serially in 28 minutes.
    maxWorkers: 2,
    coverage: {
      provider: 'v8',
      include: ['{apps,packages,plugins}/*/src/**/*.{ts,tsx}'],
      exclude: ['**/*.test.ts', '**/node_modules/**', '**/dist/**'],
      reporter: ['text-summary', ['json-summary', { file: 'coverage-summary.json' }]],
      reportsDirectory: 'coverage',
      thresholds: floors,
    },
  },
});
