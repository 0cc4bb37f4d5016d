// What `npm publish` would ship: `npm pack --dry-run --json` after `npm run build`, compared with the intended
// list. Scripts are skipped so that the listing never rebuilds dist/ under the other dist tests.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { SOURCE_CONDITION } from '../../scripts/entries.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Manifest {
  bin: Record<string, string>;
  exports: Record<string, string | Record<string, string | Record<string, string>>>;
  license: string;
  repository: { type: string; url: string };
  homepage: string;
  bugs: { url: string };
  keywords: string[];
  scripts: Record<string, string>;
}

let files: string[] = [];
let manifest: Manifest;

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

beforeAll(async () => {
  const { stdout } = await promisify(execFile)(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
    shell: process.platform === 'win32',
  });
  const [packed] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
  files = (packed?.files ?? []).map((file) => file.path).sort();
  manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as Manifest;
});

describe('npm pack', () => {
  it('ships exactly dist/, README.md, CHANGELOG.md, LICENSE and package.json', () => {
    const outsideDist = files.filter((path) => !path.startsWith('dist/'));
    expect(outsideDist).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'package.json']);
  });

  it('ships only built code and declarations from dist/: no source maps, sources, tests or data', () => {
    const inDist = files.filter((path) => path.startsWith('dist/'));
    expect(inDist.length).toBeGreaterThan(0);
    expect(inDist.filter((path) => !/^dist\/(?:bin\/)?[\w.-]+\.(?:js|cjs|d\.ts|d\.cts)$/.test(path))).toEqual([]);
    expect(files.filter((path) => /(?:^|\/)(?:src|test|examples|bench|\.data|\.ci)\/|\.map$|\.tgz$|secret/i.test(path))).toEqual([]);
  });

  it('ships every file that `exports` and `bin` point to', () => {
    const targets = [
      ...Object.values(manifest.bin),
      ...Object.values(manifest.exports).flatMap((entry) =>
        typeof entry === 'string'
          ? [entry]
          : Object.entries(entry).flatMap(([condition, targets]) =>
              // The sources, for the repository's own tools: not shipped, and stripped from the shipped manifest.
              condition === SOURCE_CONDITION || typeof targets === 'string' ? [] : Object.values(targets),
            ),
      ),
    ].map((target) => target.replace(/^\.\//, ''));
    expect(targets.filter((target) => !files.includes(target))).toEqual([]);
  });

  it('names its license, repository, homepage, bug tracker and keywords', async () => {
    expect(manifest.license).toBe('MIT');
    expect(await readFile(new URL('../../LICENSE', import.meta.url), 'utf8')).toMatch(
      /^MIT License\n\nCopyright \(c\) \d{4} launcher-auth contributors\n/,
    );
    expect(manifest.repository).toEqual({ type: 'git', url: 'git+https://github.com/launcher-auth/launcher-auth.git' });
    expect(manifest.homepage).toBe('https://github.com/launcher-auth/launcher-auth#readme');
    expect(manifest.bugs).toEqual({ url: 'https://github.com/launcher-auth/launcher-auth/issues' });
    expect(manifest.keywords).toEqual(expect.arrayContaining(['jwt', 'bearer', 'launcher']));
  });

  it('builds on `npm ci` in a clone (prepare), so that the bin exists before any publish', () => {
    // Electron's types for the recipe's typecheck are taken first (scripts/electron-types.mjs), then the build.
    expect(manifest.scripts.prepare).toBe('node scripts/electron-types.mjs && npm run build');
  });

  it('ships a package.json with no install-time script, and leaves the repository\'s package.json as it was', async () => {
    const before = await readFile(new URL('../../package.json', import.meta.url), 'utf8');
    const folder = await mkdtemp(join(tmpdir(), 'launcher-auth-pack-'));
    try {
      // With its scripts (prepack strips, postpack restores), as `npm pack` and `npm publish` run it.
      const { stdout } = await promisify(execFile)(npm, ['pack', '--json', '--pack-destination', folder], {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        shell: process.platform === 'win32',
      });
      const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
      const { stdout: shipped } = await promisify(execFile)('tar', ['-xzOf', join(folder, packed?.filename ?? ''), 'package/package.json']);
      const published = JSON.parse(shipped) as Manifest;
      const installTime = ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare'];
      expect(Object.keys(published.scripts).filter((name) => installTime.includes(name))).toEqual([]);
      expect(published.scripts.build).toBe(manifest.scripts.build);
      const { scripts: _shippedScripts, ...shippedRest } = published;
      const { scripts: _repositoryScripts, ...repositoryRest } = manifest;
      const exportsShipped = Object.fromEntries(
        Object.entries(repositoryRest.exports).map(([subpath, entry]) => {
          if (typeof entry === 'string') return [subpath, entry];
          const { [SOURCE_CONDITION]: _source, ...shipped } = entry;
          return [subpath, shipped];
        }),
      );
      expect(shippedRest).toEqual({ ...repositoryRest, exports: exportsShipped });
      expect(JSON.stringify(published)).not.toContain(SOURCE_CONDITION);
      expect(await readFile(new URL('../../package.json', import.meta.url), 'utf8')).toBe(before);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('before `npm ci` (a fresh clone: no node_modules, no dist/), says in one line to run it, without a stack trace', async () => {
    const clone = await mkdtemp(join(tmpdir(), 'launcher-auth-fresh-'));
    try {
      await mkdir(join(clone, 'scripts'));
      await copyFile(join(ROOT, 'package.json'), join(clone, 'package.json'));
      for (const script of ['pack-manifest.mjs', 'entries.mjs'])
        await copyFile(join(ROOT, 'scripts', script), join(clone, 'scripts', script));
      const failed = await promisify(execFile)(npm, ['pack', '--pack-destination', clone], { cwd: clone, shell: process.platform === 'win32' }).then(
        () => undefined,
        (error: unknown) => error as { code?: unknown; stderr?: string },
      );
      expect(failed?.code).toBe(1);
      const ours = (failed?.stderr ?? '').split('\n').filter((line) => !/^npm (?:error|warn)/.test(line) && line.trim() !== '');
      expect(ours).toEqual(['launcher-auth: run `npm ci` first (it installs the tools and builds dist/), then `npm pack` again.']);
      expect(failed?.stderr).not.toMatch(/ENOENT|\n\s+at /);
      expect(await readFile(join(clone, 'package.json'), 'utf8')).toBe(await readFile(join(ROOT, 'package.json'), 'utf8'));
    } finally {
      await rm(clone, { recursive: true, force: true });
    }
  });
});
