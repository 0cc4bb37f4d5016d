// The source's layers as ARCHITECTURE.md draws them, checked on the files themselves: each layer imports only
// from the layers below it, no source file grows past 400 lines, no import cycle (type-only imports included), and
// a workspace package (packages/*) reaches the core only through its public entry points, as any store author's
// package would.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const PACKAGES = fileURLToPath(new URL('../packages/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.name === 'node_modules' || entry.name === 'dist'
      ? []
      : entry.isDirectory()
        ? sources(join(dir, entry.name))
        : entry.name.endsWith('.ts')
          ? [join(dir, entry.name)]
          : [],
  );
}

/**
 * The imports of a workspace package's file (`path`, absolute) that reach into the core's sources: a relative path
 * into src/, or a package subpath that is not one of the core's entry points (`launcher-auth/dist/...`).
 */
export function intoCore(path: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((match) => match[1] as string);
  return specifiers.filter((specifier) =>
    specifier.startsWith('.')
      ? !relative(SRC, join(path, '..', specifier)).startsWith('..')
      : /^launcher-auth\/(?!(?:node|express|fastify|fetch|hono|koa|testing|store-kit|keyring)$)/.test(specifier),
  );
}

/**
 * The import cycles among `files` (absolute paths and their text), each as the paths around it: every relative
 * `import`/`export ... from`, `import type` included, since a cycle of types is a cycle of concepts to read.
 */
export function importCycles(files: ReadonlyArray<{ path: string; text: string }>): string[][] {
  const known = new Set(files.map(({ path }) => path));
  const edges = new Map(
    files.map(({ path, text }) => [
      path,
      [...text.matchAll(/^(?:import|export)\b[^'";]*?from\s*'(\.[^']+)'/gm)]
        .map((match) => join(path, '..', (match[1] as string).replace(/\.js$/, '.ts')))
        .filter((target) => known.has(target)),
    ]),
  );
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const { path } of files) if (!state.has(path)) visit(path);
  return cycles;
}

const FILES = sources(SRC).map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));

/** The top-level folders of src/ that each file imports from (relative imports only). */
function layersImported(file: { path: string; text: string }): string[] {
  const layers = new Set<string>();
  for (const [, specifier] of file.text.matchAll(/^(?:import|export)[^'"]*from '(\.[^']*)'/gm)) {
    const target = relative(SRC, join(SRC, file.path, '..', specifier as string));
    layers.add(target.split('/')[0] as string);
  }
  return [...layers].sort();
}

/** What each layer may import, besides itself (ARCHITECTURE.md's table). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  authority: [],
  gate: ['authority'],
  stores: ['authority'],
  testing: ['authority'],
  adapters: ['authority', 'gate'],
};

describe('the source layout', () => {
  it('reads every source file', () => {
    expect(FILES.length).toBeGreaterThan(40);
  });

  it.each(Object.entries(MAY_IMPORT))('src/%s/ imports only from the layers below it', (layer, allowed) => {
    const offending = FILES.filter(({ path }) => path.startsWith(`${layer}/`)).flatMap((file) =>
      layersImported(file)
        .filter((target) => target !== layer && !allowed.includes(target))
        .map((target) => `${file.path} imports from src/${target}/`),
    );
    expect(offending).toEqual([]);
  });

  it("no import cycle among src/ and the packages' src/, type-only imports included", () => {
    const files = [...sources(SRC), ...sources(PACKAGES).filter((path) => /[/\\]src[/\\]/.test(path))].map((path) => ({
      path,
      text: readFileSync(path, 'utf8'),
    }));
    const cycles = importCycles(files).map((cycle) =>
      cycle.map((path) => relative(join(SRC, '..'), path)).join(' -> '),
    );
    expect(cycles).toEqual([]);
  });

  it('the cycle check finds a planted cycle of type-only imports', () => {
    const a = join(SRC, 'authority/planted-a.ts');
    const b = join(SRC, 'authority/planted-b.ts');
    const planted = [
      { path: a, text: "import type { B } from './planted-b.js';\nexport interface A { b: B }" },
      { path: b, text: "import type { A } from './planted-a.js';\nexport interface B { a: A }" },
    ];
    expect(importCycles(planted)).toEqual([[a, b, a]]);
    expect(importCycles(planted.slice(0, 1))).toEqual([]);
  });

  it('no source file is over 400 lines', () => {
    const long = FILES.filter(({ text }) => text.trimEnd().split('\n').length > 400).map(({ path }) => path);
    expect(long).toEqual([]);
  });
});

describe('a workspace package', () => {
  const files = sources(PACKAGES).map((path) => ({ path, text: readFileSync(path, 'utf8') }));

  it('reads every file of packages/', () => {
    expect(files.length).toBeGreaterThan(60);
  });

  it("imports the core only through its public entry points, never a path inside the core's src/", () => {
    const offending = files.flatMap(({ path, text }) =>
      intoCore(path, text).map((specifier) => `${relative(PACKAGES, path)} imports ${specifier}`),
    );
    expect(offending).toEqual([]);
  });

  it('the check finds a planted import of the core', () => {
    const planted = join(PACKAGES, 'redis/src/planted.ts');
    expect(intoCore(planted, "import { x } from '../../../src/authority/record.js';")).toHaveLength(1);
    expect(intoCore(planted, "const y = await import('launcher-auth/dist/index.js');")).toHaveLength(1);
    expect(intoCore(planted, "import { parseRecord } from 'launcher-auth/store-kit';")).toEqual([]);
    expect(intoCore(planted, "import { LEASE } from './lease.js';")).toEqual([]);
  });

  it('no source file is over 400 lines', () => {
    const long = files
      .filter(({ path, text }) => /[/\\]src[/\\]/.test(path) && text.trimEnd().split('\n').length > 400)
      .map(({ path }) => relative(PACKAGES, path));
    expect(long).toEqual([]);
  });
});
