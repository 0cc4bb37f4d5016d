import { defineConfig } from 'tsup';

// One build for every subpath: with splitting, shared core code (and so LauncherAuthError) lives in
// one chunk per format, so an error thrown under one subpath is `instanceof` the class from another.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    node: 'src/adapters/node.ts',
    express: 'src/adapters/express.ts',
    fastify: 'src/adapters/fastify.ts',
    fetch: 'src/adapters/fetch.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  splitting: true,
  sourcemap: false,
  clean: true,
  target: 'node20',
  platform: 'node',
  treeshake: true,
  removeNodeProtocol: false,
  external: ['express', 'fastify', 'fastify-plugin', 'jose'],
});
