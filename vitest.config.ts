import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The package's own names resolve to the sources, as tsconfig's `paths` do for tsc and tsx.
    alias: [
      { find: /^launcher-auth$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      {
        find: /^launcher-auth\/(node|express|fastify|fetch|hono|koa)$/,
        replacement: fileURLToPath(new URL('./src/adapters/$1.ts', import.meta.url)),
      },
      { find: /^launcher-auth\/testing$/, replacement: fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)) },
      {
        find: /^launcher-auth\/(redis|keyring)$/,
        replacement: fileURLToPath(new URL('./src/stores/$1/index.ts', import.meta.url)),
      },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/dist/**', 'test/browser/**', 'node_modules/**'],
    testTimeout: 20_000,
    // Most long files wait on real processes and timers (Redis faults, a clean install, leases), not on the CPU:
    // four at once fit a 2-core machine, where vitest's default would run them one after another.
    maxWorkers: 4,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
