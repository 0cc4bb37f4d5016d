// @ts-check
// Electron's own published types, for `npm run typecheck` and `npm run lint` of examples/electron/, without
// installing Electron: its install script downloads the Electron binary from GitHub, and its package needs Node 22.
// On `npm ci` (the `prepare` script) this takes only electron.d.ts out of the package's tarball, fetched by
// `npm pack` from the npm registry (npm runs no script of a package it packs), checked against the registry's
// SHA-512 pinned below, and kept in node_modules/.cache. With `--check` (typecheck and lint) it fetches nothing:
// the tests reach no network, so a missing file is a one-line error that says to run `npm ci`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const VERSION = '45.4.1';
/** `npm view electron@45.4.1 dist.integrity` */
const INTEGRITY = 'sha512-DjsJ/eQhovkjf1vYFFyh5GB8NMx+L5bdYaonvGOlWselg3DQ0fwIF0N/+2hrPsoS4whmmNswh21ym/8dgt1y5Q==';
const TARGET_DIR = join('node_modules', '.cache', 'launcher-auth', `electron-${VERSION}`);
const TARGET = join(TARGET_DIR, 'electron.d.ts');

if (!existsSync(TARGET) && process.argv.includes('--check')) {
  console.error(
    `electron-types: ${TARGET} is missing; \`npm ci\` (its prepare step) fetches it from the npm registry.`,
  );
  process.exit(1);
}

if (!existsSync(TARGET)) {
  const work = mkdtempSync(join(tmpdir(), 'launcher-auth-electron-types-'));
  try {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const packed = JSON.parse(
      execFileSync(npm, ['pack', `electron@${VERSION}`, '--json', '--pack-destination', work], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        shell: process.platform === 'win32',
      }),
    );
    const tarball = join(work, packed[0].filename);
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (integrity !== INTEGRITY) {
      console.error(
        `electron-types: electron@${VERSION} from the registry is not the published tarball (SHA-512 differs).`,
      );
      process.exit(1);
    }
    execFileSync('tar', ['-xzf', tarball, '-C', work, 'package/electron.d.ts']);
    mkdirSync(TARGET_DIR, { recursive: true });
    renameSync(join(work, 'package', 'electron.d.ts'), TARGET);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
