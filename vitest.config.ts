import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { allEntryPoints } from './scripts/entries.mjs';
import { budget, SLOWNESS } from './test/support/machine.js';

/**
 * The real-process tier: files that start an outside process (redis-server, a keychain daemon, the CLI, an
 * example, an install) or wait on a real clock (file watchers, leases). Everything else under test/ is the quick
 * tier. A new file joins this tier by its folder or by its name: `*.process.test.ts`.
 */
const PROCESS = [
  'test/**/*.process.test.ts',
  'packages/redis/test/*.test.ts',
  'packages/redis/test/faults/**/*.test.ts',
  'test/stores/keyring.test.ts',
  'test/stores/file.test.ts',
  'test/stores/file-race.test.ts',
  'test/authority/settings.test.ts',
  'test/hardening/crash.test.ts',
  'test/hardening/memory.test.ts',
  'test/hardening/late-save.test.ts',
  'test/hardening/store-faults.test.ts',
  'test/hardening/rotation-under-load.test.ts',
  'test/cli/**/*.test.ts',
  'test/examples/**/*.test.ts',
  'test/runtimes/**/*.test.ts',
  'test/nest/**/*.test.ts',
];
/**
 * The simulator's schedules (`npm run test:sim`): CPU only, so a project of their own that `npm test` runs beside the
 * others at a lower priority (scripts/test.mjs). How many: QUICK_SCHEDULES, or DEEP_SCHEDULES in the deep tier.
 */
const SIMULATION = ['packages/redis/test/sim/simulation*.test.ts'];
/**
 * What only CI needs (`npm run test:deep`, test/README.md says why each): a clean install, several processes on
 * Sentinel and Cluster, the CLI waiting out Redis leases. `npm test` leaves them out.
 */
const DEEP_ONLY = [
  'test/install/**/*.test.ts',
  // It packs the package (`npm pack` rewrites package.json for a moment), which npm test's other lane reads.
  'test/examples/new-user.test.ts',
  'test/cli/redis.test.ts',
  'packages/redis/test/instances.test.ts',
  'packages/redis/test/split-brain.test.ts',
  'packages/redis/test/failback.test.ts',
  'packages/redis/test/sentinel.test.ts',
  'packages/redis/test/cluster.test.ts',
];
/** Trials that `npm test` runs a few of and the deep tier at their full count (`deepOr()`, test/support/tier.ts). */
const SCALED = [
  'packages/redis/test/faults/overlap.test.ts',
  'packages/redis/test/faults/sigstop.test.ts',
  'packages/redis/test/faults/client-pause.test.ts',
  'test/hardening/crash.test.ts',
  'test/hardening/rotation-under-load.test.ts',
  'test/hardening/memory.test.ts',
  'test/authority/rotation.property.test.ts',
];
/** `npm test` (scripts/test.mjs) names a file here for each vitest run, and adds up the counts it finds there. */
const REPORT = process.env['LAUNCHER_AUTH_TEST_REPORT'];
/** Run by their own configs: `npm run test:dist` after the build, `npm run test:browser`. */
const ELSEWHERE = ['test/dist/**', 'test/browser/**', 'node_modules/**'];

export default defineConfig({
  resolve: {
    // The package's own names (package.json's `exports`) resolve to the sources, as tsconfig's `paths` do for tsc
    // and tsx.
    alias: allEntryPoints().map(({ specifier, source }) => ({
      find: new RegExp(`^${specifier}$`),
      replacement: fileURLToPath(new URL(`./${source}`, import.meta.url)),
    })),
  },
  test: {
    // A deadline only a stuck test reaches, stretched by the machine factor (test/support/machine.ts), which the
    // line above measured once for the whole run and handed to the workers.
    testTimeout: budget(20_000),
    hookTimeout: budget(20_000),
    setupFiles: ['test/support/matchers.ts', 'test/support/state-home.ts'],
    expect: { requireAssertions: true },
    reporters: REPORT === undefined ? ['default'] : ['default', ['json', { outputFile: REPORT }]],
    // Most long files wait on real processes and timers (Redis faults, a clean install, leases), not on the CPU:
    // four at once fit a 2-core machine, where vitest's default would run them one after another.
    maxWorkers: 4,
    projects: [
      {
        extends: true,
        test: {
          name: 'quick',
          // A worker imports the library, jose and the frameworks once for all its files, not once per file: about
          // half of this tier's CPU time was those imports. No test here mocks a module (vi.mock), and what one
          // patches (a global, a built-in's export) it puts back.
          isolate: false,
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          // The type tests (`*.test-d.ts`) are checked once, by `npm run typecheck`: tsconfig.json includes test/.
          exclude: [...ELSEWHERE, ...PROCESS, ...SIMULATION, ...DEEP_ONLY],
        },
      },
      {
        extends: true,
        test: {
          name: 'simulation',
          include: SIMULATION,
          setupFiles: ['packages/redis/test/sim/yield-cpu.ts'],
          // Node imports the schedules' modules itself (tsx compiles the TypeScript), not vite's module runner, whose
          // every imported name is a property read on a module object: the simulator's hot loop crosses modules at
          // each step, and the same 400 schedules took about 12 % less CPU this way. Nothing here uses vi.mock.
          execArgv: ['--import', 'tsx'],
          experimental: { viteModuleRunner: false },
        },
      },
      {
        extends: true,
        test: {
          name: 'process',
          isolate: false,
          include: PROCESS,
          exclude: [...ELSEWHERE, ...DEEP_ONLY],
        },
      },
      {
        extends: true,
        test: {
          name: 'deep',
          include: [...DEEP_ONLY, ...SCALED],
          exclude: ELSEWHERE,
        },
      },
    ],
  },
});

if (SLOWNESS > 1) console.log(`Machine factor ${SLOWNESS}: every real-process budget is stretched by it.`);
