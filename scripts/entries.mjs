// @ts-check
// The package's entry points, read from package.json's `exports` (the one place they are listed): each subpath's
// source under the `launcher-auth-source` condition, which scripts/pack-manifest.mjs strips from the published
// manifest. tsup.config.ts, vitest.config.ts and the benchmark's build derive their entries from this.
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The condition under which each subpath names its source file. */
export const SOURCE_CONDITION = 'launcher-auth-source';

/** The npm workspaces of the repository (package.json's `workspaces`): each a package of its own, such as packages/redis. */
export function workspaces() {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return /** @type {string[]} */ (manifest.workspaces ?? []);
}

/**
 * Every subpath with a source of the package in `folder` (the repository itself by default): its specifier
 * (`launcher-auth`, `launcher-auth/node`...), its build name (`index`, `node`...: dist/<name>.js) and its source
 * file relative to the repository (`src/adapters/node.ts`, `packages/redis/src/index.ts`).
 * @returns {{ specifier: string; name: string; source: string }[]}
 */
export function entryPoints(folder = '.') {
  const prefix = folder === '.' ? '' : `${folder}/`;
  const manifest = JSON.parse(readFileSync(new URL(`../${prefix}package.json`, import.meta.url), 'utf8'));
  /** @type {{ specifier: string; name: string; source: string }[]} */
  const entries = [];
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const source = typeof target === 'object' && target !== null ? target[SOURCE_CONDITION] : undefined;
    if (typeof source !== 'string') continue;
    entries.push({
      specifier: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
      name: subpath === '.' ? 'index' : subpath.slice(2),
      source: `${prefix}${source.slice(2)}`,
    });
  }
  return entries;
}

/** The entry points of the repository's package and of every workspace, which the tests and tsc resolve to sources. */
export function allEntryPoints() {
  return [...entryPoints(), ...workspaces().flatMap((folder) => entryPoints(folder))];
}

// `node scripts/entries.mjs` (part of `npm run lint`): tsconfig.json's `paths` must name the same sources. They are
// the one copy that cannot be derived: tsx, which runs the examples, the demo and the test fixtures, resolves the
// package's own name through `paths` and does not read `customConditions`.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { default: ts } = await import('typescript');
  const config = ts.readConfigFile(fileURLToPath(new URL('../tsconfig.json', import.meta.url)), (path) =>
    ts.sys.readFile(path),
  );
  /** @type {Record<string, string[]>} */
  const paths = config.config?.compilerOptions?.paths ?? {};
  const expected = Object.fromEntries(allEntryPoints().map((entry) => [entry.specifier, [`./${entry.source}`]]));
  if (JSON.stringify(paths) !== JSON.stringify(expected)) {
    console.error(
      `tsconfig.json: compilerOptions.paths must be, in this order, as package.json's exports name the sources:\n${JSON.stringify(expected, null, 2)}`,
    );
    process.exit(1);
  }
}
