// A new user with nothing but the pages: the README's quick start and docs/desktop.md's Electron recipe, copied
// into empty folders, with launcher-auth installed from its tarball (`npm pack`, once) and the other packages the
// pages name linked from this repository (no registry in the tests), typecheck and run as the pages say. Electron
// itself is not started (its binary is never downloaded here): the recipe is typechecked against the Electron
// types its package.json names, and built with its own build script.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killGroup, spawnOwned } from '../support/children.js';
import { budget } from '../support/machine.js';
import { until } from '../support/poll.js';

const ROOT = join(import.meta.dirname, '../..');
const run = promisify(execFile);
const folders: string[] = [];
let tarball = '';

async function folder(name: string): Promise<string> {
  const made = await mkdtemp(join(tmpdir(), `launcher-auth-${name}-`));
  folders.push(made);
  return made;
}

/** npm, offline (the tests reach no network). */
function npm(cwd: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run('npm', [...args, '--offline', '--no-audit', '--no-fund'], { cwd, maxBuffer: 64 * 1024 * 1024 });
}

/**
 * The page's `npm install`: launcher-auth from its tarball, and each other package the page names from this
 * repository's own node_modules (a local folder, which npm links), since the tests reach no registry. Electron is
 * its published types alone (scripts/electron-types.mjs keeps them): its install script would add the binary.
 */
async function install(dir: string, names: string[]): Promise<void> {
  const sources: string[] = [];
  for (const name of names) {
    if (name !== 'electron') {
      sources.push(join(ROOT, 'node_modules', name));
      continue;
    }
    const types = await folder('electron-types');
    await writeFile(join(types, 'package.json'), JSON.stringify({ name, version: '45.4.1', types: 'electron.d.ts' }));
    const cached = join(ROOT, 'node_modules/.cache/launcher-auth/electron-45.4.1/electron.d.ts');
    await copyFile(cached, join(types, 'electron.d.ts'));
    sources.push(types);
  }
  await npm(dir, 'install', join(ROOT, 'node_modules/jose'), ...sources, tarball);
}

/** The fenced block of `language` that follows the line `heading` first. */
function blockAfter(page: string, heading: string, language: string): string {
  const start = page.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThanOrEqual(0);
  const match = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(page.slice(start));
  if (match === null) throw new Error(`no ${language} block after ${heading}`);
  return match[1] as string;
}

beforeAll(async () => {
  const packed = await folder('packed');
  // `prepare` builds dist/ from the sources first, as for a release.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', packed], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  tarball = join(packed, (JSON.parse(stdout) as Array<{ filename: string }>)[0]?.filename ?? '');
}, budget(240_000));

afterAll(async () => {
  for (const made of folders) await rm(made, { recursive: true, force: true });
}, budget(120_000));

describe('the README quick start, in an empty folder', () => {
  it(
    'typechecks, runs with `npx tsx server.ts`, answers its own curl line, and on a damaged secret prints the ' +
      'message and exits 1',
    async () => {
      const dir = await folder('quick-start');
      const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
      await npm(dir, 'init', '-y');
      await npm(dir, 'pkg', 'set', 'type=module');
      await install(dir, ['tsx', 'typescript', '@types/node']);
      await writeFile(join(dir, 'server.ts'), blockAfter(readme, '## Quick start', 'ts'));
      const tsc = ['tsc', '--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', '--types', 'node'];
      await run('npx', ['--no-install', ...tsc, 'server.ts'], { cwd: dir });

      const env = { ...process.env, XDG_CONFIG_HOME: join(dir, 'config'), PORT: '' };
      const server = spawnOwned('npx', ['--no-install', 'tsx', 'server.ts'], { cwd: dir, env });
      try {
        let output = '';
        server.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
        expect(await until(() => output.includes('\n'), 30_000)).toBe(true);
        const line = /^curl -H "Authorization: Bearer ([\w.-]+)" (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(output);
        expect(line !== null).toBe(true);
        const [, token = '', url = ''] = line ?? [];
        const allowed = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        expect([allowed.status, (await allowed.text()).startsWith('hello, key ')]).toEqual([200, true]);
        const refused = await fetch(url);
        expect([refused.status, await refused.text()]).toEqual([401, '']);
      } finally {
        killGroup(server);
      }

      await writeFile(join(dir, 'config', 'my-launcher', 'secret.json'), '{"version":1,', { mode: 0o600 });
      const damaged = await run('npx', ['--no-install', 'tsx', 'server.ts'], { cwd: dir, env }).then(
        () => ({ code: 0, stderr: '' }),
        (error: unknown) => {
          const { code, stderr = '' } = error as { code?: number; stderr?: string };
          return { code, stderr };
        },
      );
      expect(damaged.code).toBe(1);
      expect(damaged.stderr).toMatch(/^The secret file .*secret\.json is unusable: /);
      expect(damaged.stderr).not.toMatch(/\n\s+at /);
    },
    budget(240_000),
  );
});

describe('docs/desktop.md, in an empty folder', () => {
  it(
    'its files, as the page gives them, install, typecheck (`npm run typecheck`) and build (`npm run build`)',
    async () => {
      const dir = await folder('desktop');
      const page = await readFile(join(ROOT, 'docs/desktop.md'), 'utf8');
      const headings = page.split('\n').filter((line) => /^### `[\w.-]+`/.test(line));
      const files = headings.map((line) => /`([\w.-]+)`/.exec(line)?.[1] ?? '');
      expect([...files].sort()).toEqual([
        'index.html',
        'main.ts',
        'package.json',
        'preload.ts',
        'renderer.ts',
        'safe-storage-store.ts',
        'settings-api.ts',
        'tsconfig.json',
      ]);
      for (const [index, name] of files.entries()) {
        const language = name.endsWith('.ts') ? 'ts' : name.endsWith('.json') ? 'json' : 'html';
        await writeFile(join(dir, name), blockAfter(page, headings[index] as string, language));
      }
      const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as {
        type?: string;
        dependencies: Record<string, string>;
        devDependencies: Record<string, string>;
      };
      expect([manifest.type, manifest.devDependencies['electron']]).toEqual(['module', '^45.4.1']);
      const names = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.devDependencies)];
      await install(
        dir,
        names.filter((name) => name !== 'launcher-auth'),
      );
      await run('npm', ['run', 'typecheck'], { cwd: dir });
      await run('npm', ['run', 'build'], { cwd: dir });
      expect(['main.js', 'preload.cjs', 'renderer.js'].filter((name) => existsSync(join(dir, name)))).toEqual([
        'main.js',
        'preload.cjs',
        'renderer.js',
      ]);
    },
    budget(300_000),
  );
});
