import { defineConfig } from 'tsup';

// launcher-auth and redis are peers: the build imports them, never bundles them.
export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  target: 'node20',
  platform: 'node',
  sourcemap: false,
  treeshake: true,
  removeNodeProtocol: false,
  external: ['launcher-auth', 'launcher-auth/store-kit', 'redis'],
  // `@internal` members stay out of the public declarations. The declarations resolve `launcher-auth` through
  // node_modules to its built types (tsconfig.build.json has no `paths`), so they import it instead of copying it.
  dts: { compilerOptions: { stripInternal: true } },
  tsconfig: 'tsconfig.build.json',
  clean: false,
});
