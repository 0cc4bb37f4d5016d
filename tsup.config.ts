import { defineConfig, type Options } from 'tsup';
import { entryPoints } from './scripts/entries.mjs';

const shared: Options = {
  target: 'node20',
  platform: 'node',
  sourcemap: false,
  treeshake: true,
  removeNodeProtocol: false,
  external: ['express', 'fastify', 'hono', 'koa', 'jose', 'redis', '@napi-rs/keyring', '@launcher-auth/redis'],
};

export default defineConfig([
  // `npm run build` empties dist/ first: the two builds run side by side, so neither may clean.
  // The library: with splitting, shared core code (and so LauncherAuthError) lives in one chunk per format,
  // so an error thrown under one subpath is `instanceof` the class from another.
  {
    ...shared,
    // One entry per subpath of package.json's `exports`, named as dist/ names it.
    entry: Object.fromEntries(entryPoints().map(({ name, source }) => [name, source])),
    format: ['esm', 'cjs'],
    // `@internal` members (the symbol-keyed methods the gate calls) stay out of the public declarations.
    dts: { compilerOptions: { stripInternal: true } },
    splitting: true,
    clean: false,
  },
  // The bin: ESM only (it reads its own package.json through import.meta.url), in its own folder so that the
  // library build's clean step and chunk names never meet it.
  {
    ...shared,
    entry: { cli: 'src/cli/main.ts' },
    outDir: 'dist/bin',
    format: ['esm'],
    dts: false,
    splitting: false,
    clean: false,
  },
]);
