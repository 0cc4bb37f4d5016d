import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { entryPoints } from './scripts/entries.mjs';

export default defineConfig({
  resolve: {
    // The package's own names (package.json's `exports`) resolve to the sources, as tsconfig's `paths` do for tsc
    // and tsx.
    alias: entryPoints().map(({ specifier, source }) => ({
      find: new RegExp(`^${specifier}$`),
      replacement: fileURLToPath(new URL(`./${source}`, import.meta.url)),
    })),
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
