// `npm run test:browser`: the tests that drive a real browser (Debian's chromium), kept out of `npm test`.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  // The package's own names resolve to the sources, as in `npm test`.
  resolve: base.resolve ?? {},
  test: {
    include: ['test/browser/**/*.test.ts'],
    // `toBeSameToken` and the per-file state folder, as in `npm test`.
    setupFiles: ['test/support/matchers.ts', 'test/support/state-home.ts'],
    // A browser's first start on a cold, shared machine can take a while.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
