// The source's layers as ARCHITECTURE.md draws them, checked on the files themselves: each layer imports only
// from the layers below it, and no source file grows past 400 lines.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
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

  it('no source file is over 400 lines', () => {
    const long = FILES.filter(({ text }) => text.trimEnd().split('\n').length > 400).map(({ path }) => path);
    expect(long).toEqual([]);
  });
});
