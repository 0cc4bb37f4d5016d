// @ts-check
// `npm run mutants:core`: StrykerJS mutates the files that decide every request and runs the quick tier against
// each mutant (test/README.md says how long it takes). `-- --mutate src/gate/cors.ts` runs one file of them.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutants.config.ts' },
  // Only the tests that cover a mutant run against it.
  coverageAnalysis: 'perTest',
  mutate: [
    'src/authority/token.ts',
    'src/authority/bearer.ts',
    'src/authority/key-state.ts',
    'src/authority/token-authority.ts',
    'src/authority/settings.ts',
    'src/gate/gate.ts',
    'src/gate/cors.ts',
    'src/gate/subprotocol.ts',
    'src/adapters/node.ts',
    'src/adapters/express.ts',
    'src/adapters/fastify.ts',
  ],
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/core.html' },
  jsonReporter: { fileName: 'reports/mutation/core.json' },
  // Two cores shared with other work: one test process unless `--concurrency` says otherwise.
  concurrency: 1,
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
