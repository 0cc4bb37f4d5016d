// The quick tier alone, for StrykerJS (`npm run mutants:core`, stryker.config.mjs): its vitest runner runs every
// project of the config it is given and takes no `--project`, so this config keeps only `quick` of vitest.config.ts.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

const quick = (base.test?.projects ?? []).filter(
  (project) => typeof project === 'object' && 'test' in project && project.test?.name === 'quick',
);
if (quick.length !== 1) throw new Error('vitest.mutants.config.ts: vitest.config.ts has no `quick` project.');

// StrykerJS's vitest runner runs the tests in worker threads, where `process.chdir()` throws; the one quick file that
// changes the working directory (secretPath's independence of it) tests none of the mutated files.
const NEEDS_CHDIR = ['test/stores/secret-path.test.ts'];

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    projects: quick.map((project) =>
      typeof project === 'object' && 'test' in project
        ? { ...project, test: { ...project.test, exclude: [...(project.test?.exclude ?? []), ...NEEDS_CHDIR] } }
        : project,
    ),
  },
});
