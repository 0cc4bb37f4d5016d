// The README, the guides in docs/ and the README of each workspace package: their code blocks are the files in
// examples/readme/ and examples/electron/ (which tsc typechecks), their links lead to files and headings that exist,
// and the README stays a front page.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');
const REPOSITORY =
  /^https:\/\/(?:github\.com\/launcher-auth\/launcher-auth\/blob|raw\.githubusercontent\.com\/launcher-auth\/launcher-auth)\/main\/([^#]+)(?:#(.*))?$/;

const readme = read('README.md');
const guides = readdirSync(new URL('docs/', root))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
/** The guide of each workspace package, which its npm page shows. */
const packageGuides = ['packages/redis/README.md'];
const pages = ['README.md', ...guides, ...packageGuides];
const texts = new Map(pages.map((page) => [page, read(page)]));

/** The bodies of the fenced blocks of these languages, in every page. */
function fenced(languages: string): string[] {
  const pattern = new RegExp('```(?:' + languages + ')\\n([\\s\\S]*?)```', 'g');
  return [...texts.values()].flatMap((text) => [...text.matchAll(pattern)].map((match) => match[1] as string));
}

const snippets = readdirSync(new URL('examples/readme/', root)).filter((name) => /\.c?ts$|\.cjs$/.test(name));
const clients = readdirSync(new URL('examples/clients/', root));
const sourceOf = (folder: string, name: string): string => read(`examples/${folder}/${name}`);

/** GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const [, heading] of withoutCode.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = (heading as string)
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** Every link target of a page: inline links and images, outside code blocks. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string);
}

/** The repository file and heading a link leads to, or `undefined` for a link outside the repository. */
function resolve(page: string, target: string): { file: string; anchor: string | undefined } | undefined {
  const absolute = REPOSITORY.exec(target);
  if (absolute !== null) return { file: absolute[1] as string, anchor: absolute[2] };
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [path = '', anchor] = target.split('#');
  const file = path === '' ? page : new URL(path, new URL(page, 'file:///')).pathname.slice(1);
  return { file, anchor };
}

describe('README', () => {
  it('opens with the two commands, the demo then the test suite, on its first screen', () => {
    const commands = /```sh\n([\s\S]*?)```/.exec(readme)?.[1]?.trim().split('\n') ?? [];
    expect(commands.map((line) => line.split('#')[0]?.trim())).toEqual([
      'npm ci && npm run demo',
      'npm ci && npm test',
    ]);
    const firstScreen = readme.split('\n').slice(0, 25).join('\n');
    expect(firstScreen).toContain('npm ci && npm run demo');
    expect(firstScreen).toContain('npm ci && npm test');
  });

  it('is a front page of at most 250 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });

  it('gives, in order: what it is, install, a server, the settings window, frameworks, then the clone', () => {
    const headings = [...readme.matchAll(/^## (.+)$/gm)].map((match) => match[1]);
    const order = [
      'What it is',
      'Install',
      'Quick start',
      'The settings window',
      'Frameworks',
      'From a clone: the demo and the tests',
    ];
    expect(headings.filter((heading) => order.includes(heading as string))).toEqual(order);
    const what = /## What it is\n\n([\s\S]*?)\n\n/.exec(readme)?.[1] ?? '';
    expect(what.split('\n').length).toBeLessThanOrEqual(5);
  });

  it('shows a server of at most 20 lines whose secret is under secretPath(), and the settings window in about 10', () => {
    const server = sourceOf('readme', 'quick-start.ts');
    expect(readme.includes(server)).toBe(true);
    expect(server.trimEnd().split('\n').length).toBeLessThanOrEqual(20);
    expect(server).toContain("new FileSecretStore(secretPath('my-launcher'))");
    const settings = sourceOf('readme', 'settings.ts');
    expect(readme.includes(settings)).toBe(true);
    // Ten lines of code under the file's one-line heading.
    expect(settings.trimEnd().split('\n').length).toBeLessThanOrEqual(11);
    expect(settings).toMatch(/regenerateToken\(authority\)/);
  });

  it('gives each framework one line, linking to its recipe, and each recipe under 20 lines in the adapters guide', () => {
    for (const name of [
      'node:http',
      'Express 4 and 5',
      'Fastify 5',
      'Hono',
      'Koa',
      'Bun, Deno, Workers',
      'NestJS',
      'CommonJS',
    ]) {
      expect(readme, name).toMatch(new RegExp(`^- \\*\\*${name}\\*\\*: .*\\(\\[(?:recipe|guide)\\]\\(https://`, 'm'));
    }
    const adapters = texts.get('docs/adapters.md') ?? '';
    for (const name of ['node.ts', 'express.ts', 'fastify.ts', 'hono-auth.ts', 'koa.ts', 'commonjs.cjs']) {
      const source = sourceOf('readme', name);
      expect(adapters.includes(source), name).toBe(true);
      expect(source.trimEnd().split('\n').length, name).toBeLessThanOrEqual(20);
    }
  });

  it('gives each adapter recipe in at most 17 lines, with its install line, listening on PORT (any free port by default)', () => {
    for (const name of [
      'node.ts',
      'express.ts',
      'fastify.ts',
      'hono.ts',
      'hono-auth.ts',
      'koa.ts',
      'bun-serve.ts',
      'deno-serve.ts',
    ]) {
      const source = sourceOf('readme', name);
      expect(source.trimEnd().split('\n').length, name).toBeLessThanOrEqual(17);
      expect(source.split('\n')[0], name).toMatch(/(?:npm install|bun add|deno add) \S*launcher-auth/);
      expect(source, name).toMatch(/PORT/);
      expect(source, name).not.toMatch(/7878/);
    }
  });

  it('shows CommonJS with require() and no top-level await', () => {
    const source = sourceOf('readme', 'commonjs.cjs');
    expect(source).toMatch(/= require\('launcher-auth'\)/);
    expect(source).not.toMatch(/^(?:import |export |await |const \w+ = await )/m);
    expect(fenced('js')).toContain(source);
  });

  it('links only absolutely (so that the links work on the package page), never to a test file', () => {
    const targets = links(readme);
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter((target) => !target.startsWith('https://'))).toEqual([]);
    expect(targets.filter((target) => target.includes('/main/test/'))).toEqual([]);
    expect(readme).not.toMatch(/\btest\/[\w/-]+\.ts\b/);
  });
});

describe('README and docs/', () => {
  it('has the guides the README links to', () => {
    const linked = links(readme)
      .flatMap((target) => REPOSITORY.exec(target)?.[1] ?? [])
      .filter((file) => file.startsWith('docs/'));
    expect(new Set(linked.filter((file) => file.endsWith('.md')))).toEqual(new Set(guides));
  });

  it.each(snippets)('shows examples/readme/%s verbatim', (name) => {
    const source = sourceOf('readme', name);
    expect([...fenced('ts'), ...fenced('js')]).toContain(source);
  });

  it('has no TypeScript block that is not one of those files, or of the Electron recipe (typechecked on its own)', () => {
    const electron = readdirSync(new URL('examples/electron/', root)).filter((name) => name.endsWith('.ts'));
    const sources = [
      ...snippets.map((name) => sourceOf('readme', name)),
      ...electron.map((name) => sourceOf('electron', name)),
    ];
    expect(fenced('ts|typescript|tsx').filter((block) => !sources.includes(block))).toEqual([]);
  });

  it('has no JavaScript, Python or PowerShell block that is not a file in examples/', () => {
    const sources = [
      ...snippets.map((name) => sourceOf('readme', name)),
      ...clients.map((name) => sourceOf('clients', name)),
    ];
    expect(
      fenced('js|javascript|mjs|cjs|python|py|powershell|ps1').filter((block) => !sources.includes(block)),
    ).toEqual([]);
  });

  it.each(clients)('shows the script client examples/clients/%s verbatim', (name) => {
    expect(fenced('python|powershell|js')).toContain(sourceOf('clients', name));
  });

  it.each([...pages, 'SECURITY.md'])(
    '%s: every link to the repository leads to a file that exists, and to a heading that exists',
    (page) => {
      const text = texts.get(page) ?? read(page);
      const broken: string[] = [];
      for (const target of links(text)) {
        const resolved = resolve(page, target);
        if (resolved === undefined) continue;
        if (!existsSync(new URL(resolved.file, root))) {
          broken.push(`${target}: no file ${resolved.file}`);
          continue;
        }
        if (resolved.anchor === undefined || resolved.anchor === '') continue;
        if (!resolved.file.endsWith('.md')) {
          broken.push(`${target}: an anchor into a file that is not Markdown`);
          continue;
        }
        if (!anchors(texts.get(resolved.file) ?? read(resolved.file)).has(resolved.anchor)) {
          broken.push(`${target}: no heading #${resolved.anchor} in ${resolved.file}`);
        }
      }
      expect(broken).toEqual([]);
    },
  );

  it('finds a broken link and a broken anchor (the checker itself)', () => {
    expect(resolve('docs/stores.md', '../SECURITY.md#showing-the-token')).toEqual({
      file: 'SECURITY.md',
      anchor: 'showing-the-token',
    });
    expect(resolve('docs/stores.md', '#writing-a-secret-store')).toEqual({
      file: 'docs/stores.md',
      anchor: 'writing-a-secret-store',
    });
    expect(
      resolve('README.md', 'https://github.com/launcher-auth/launcher-auth/blob/main/docs/cli.md#exit-codes'),
    ).toEqual({
      file: 'docs/cli.md',
      anchor: 'exit-codes',
    });
    expect(resolve('README.md', 'https://github.com/panva/jose')).toBeUndefined();
    expect([
      ...anchors(
        '# A title\n## node:http — `launcher-auth/node`\n## Options (every adapter)\n## Options (every adapter)\n',
      ),
    ]).toEqual(['a-title', 'nodehttp--launcher-authnode', 'options-every-adapter', 'options-every-adapter-1']);
  });
});
