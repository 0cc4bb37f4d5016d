// The README's code blocks are the files in examples/readme/, which tsc typechecks: this keeps them the same.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url);
const readme = readFileSync(new URL('README.md', root), 'utf8');
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);
const files = readdirSync(new URL('examples/readme/', root)).filter((name) => name.endsWith('.ts'));

describe('README', () => {
  it('opens with the two commands: the demo, then the test suite', () => {
    const commands = /```sh\n([\s\S]*?)```/.exec(readme)?.[1]?.trim().split('\n') ?? [];
    expect(commands.map((line) => line.split('#')[0]?.trim())).toEqual(['npm ci && npm run demo', 'npm ci && npm test']);
  });

  it.each(files)('shows examples/readme/%s verbatim', (name) => {
    const source = readFileSync(new URL(`examples/readme/${name}`, root), 'utf8');
    expect(blocks).toContain(source);
  });

  it('has no TypeScript block that is not one of those files', () => {
    const sources = files.map((name) => readFileSync(new URL(`examples/readme/${name}`, root), 'utf8'));
    const strays = blocks.filter((block) => !sources.includes(block));
    expect(strays).toEqual([]);
  });

  it.each(readdirSync(new URL('examples/clients/', root)))('shows the script client examples/clients/%s verbatim', (name) => {
    const source = readFileSync(new URL(`examples/clients/${name}`, root), 'utf8');
    const fenced = [...readme.matchAll(/```(?:python|powershell|js)\n([\s\S]*?)```/g)].map((match) => match[1] as string);
    expect(fenced).toContain(source);
  });

  it('gives each adapter example in under 15 lines', () => {
    for (const name of ['node.ts', 'express.ts', 'fastify.ts', 'hono.ts']) {
      const lines = readFileSync(new URL(`examples/readme/${name}`, root), 'utf8').trimEnd().split('\n');
      expect(lines.length, name).toBeLessThan(15);
    }
  });

  it('links only absolutely, to files of the repository that exist, so that the links work on the package page', () => {
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string);
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter((target) => !/^(?:https:\/\/|#)/.test(target))).toEqual([]);
    const inRepository = targets
      .map((target) => /^https:\/\/(?:github\.com\/launcher-auth\/launcher-auth\/blob|raw\.githubusercontent\.com\/launcher-auth\/launcher-auth)\/main\/(.+)$/.exec(target)?.[1])
      .filter((path) => path !== undefined);
    expect(inRepository.length).toBeGreaterThan(0);
    expect(inRepository.filter((path) => !existsSync(new URL(path, root)))).toEqual([]);
  });
});
