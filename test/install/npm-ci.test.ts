// The README's first command in a fresh clone: `npm ci` with no environment variable but PATH and HOME (so no
// ELECTRON_SKIP_BINARY_DOWNLOAD or the like can hide an install script that downloads from elsewhere), then the
// CLI at once. `--prefer-offline` lets the npm cache serve what it holds; anything else comes from the registry.
// Alone in its file: a whole install and build, two to four minutes on a shared 2-core machine.
// The install scripts in the lock file, read: bun (postinstall `node install.js`), deno (`node ./install.cjs`) and
// esbuild twice (`node install.js`, its own copy and tsx's) each look for their platform's binary in the optional
// package npm has just installed from the registry (`@oven/bun-*`, `@deno/*`, `@esbuild/*`). Only when it is
// missing do bun and esbuild fall back to `npm install <that package>` and then to a download of its tarball from
// registry.npmjs.org; deno then fails; bun's error names a `curl … bun.com/install` line but never runs it. None of
// them reaches beyond the npm registry, and the lock file holds no `resolved` URL: every tarball comes from the
// registry npm is configured with.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { budget } from '../support/machine.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const folders: string[] = [];

// Removing a whole node_modules takes longer than vitest's default hook time on a loaded machine.
afterAll(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
}, budget(120_000));

/** Only what a shell needs to find programs and the user's npm cache and settings. */
function bareEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  if (process.env['HOME'] !== undefined) env['HOME'] = process.env['HOME'];
  return env;
}

describe('a fresh clone', () => {
  it(
    'installs with `npm ci` and no environment variable, and its CLI works right after',
    { timeout: budget(600_000) },
    async () => {
      const folder = await mkdtemp(join(tmpdir(), 'launcher-auth-clone-'));
      folders.push(folder);
      const clone = join(folder, 'launcher-auth');
      await run('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone], { env: bareEnvironment() });
      expect(existsSync(join(clone, 'node_modules'))).toBe(false);

      const install = await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], {
        cwd: clone,
        env: bareEnvironment(),
        maxBuffer: 64 * 1024 * 1024,
      }).then(
        ({ stderr }) => ({ outcome: 'installed', stderr }),
        (error: unknown) => ({
          outcome: `npm ci exited with ${String((error as { code?: number }).code)}:\n${(error as { stderr?: string }).stderr ?? ''}`,
          stderr: '',
        }),
      );
      expect(install.outcome).toBe('installed');
      // On every supported Node (20.19 included) no locked package asks for a newer one, and each install script is
      // one the manifest's allowScripts names (npm 11 lists the others after every install).
      expect(install.stderr.split('\n').filter((line) => /EBADENGINE|install-scripts/.test(line))).toEqual([]);
      expect(existsSync(join(clone, 'node_modules/electron'))).toBe(false);

      // `prepare` built the package on install, so the command works without a build step.
      const help = await run('npx', ['--no-install', 'launcher-auth', '--help'], {
        cwd: clone,
        env: bareEnvironment(),
      });
      expect(help.stdout).toMatch(/launcher-auth token/);
    },
  );
});
