import { defineConfig } from 'tsup';

// One build for every subpath: with splitting, shared core code (and so LauncherAuthError) lives in
// one chunk per format, so an error thrown under one subpath is `instanceof` the class from another.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  splitting: true,
  sourcemap: false,
  clean: true,
  target: 'node20',
  platform: 'node',
  treeshake: true,
});
