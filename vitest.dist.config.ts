import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const DISTS = ['./dist/', './packages/redis/dist/'].map((folder) => fileURLToPath(new URL(folder, import.meta.url)));
const quoted = (path: string): string => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The built package, as a user gets it: no aliases, so `launcher-auth` and its subpaths resolve through
// package.json `exports` (the package referencing itself) to dist/. `npm run test:dist` after `npm run build`.
/** `npm test` (scripts/test.mjs) names a file here for each vitest run, and adds up the counts it finds there. */
const REPORT = process.env['LAUNCHER_AUTH_TEST_REPORT'];

export default defineConfig({
  test: {
    include: ['test/dist/**/*.test.ts'],
    // toBeSameToken, as in the other tiers.
    setupFiles: ['test/support/matchers.ts'],
    reporters: REPORT === undefined ? ['default'] : ['default', ['json', { outputFile: REPORT }]],
    testTimeout: 20_000,
    // dist/ (and the workspace's) is loaded by Node itself, as a user's program loads it, not transformed by Vite.
    server: { deps: { external: DISTS.map((dist) => new RegExp(`^${quoted(dist)}`)) } },
  },
});
