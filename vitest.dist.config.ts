import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const DIST = fileURLToPath(new URL('./dist/', import.meta.url));

// The built package, as a user gets it: no aliases, so `launcher-auth` and its subpaths resolve through
// package.json `exports` (the package referencing itself) to dist/. `npm run test:dist` after `npm run build`.
export default defineConfig({
  test: {
    include: ['test/dist/**/*.test.ts'],
    testTimeout: 20_000,
    // dist/ is loaded by Node itself, as a user's program loads it, not transformed by Vite.
    server: { deps: { external: [new RegExp(`^${DIST.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)] } },
  },
});
