// The file store on Deno without --allow-sys: the message itself names the missing permission (Deno's error
// has no code, so it used to read only "an unexpected error"), and with --allow-sys=uid the store opens.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { budget } from '../support/machine.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DENO = join(ROOT, 'node_modules/.bin/deno');
const SCRIPT = join(ROOT, 'test/runtimes/file-store-open.ts');

function deno(permissions: string[], folder: string): Promise<string> {
  if (!existsSync(DENO)) throw new Error(`${DENO} is missing: run \`npm ci\` (deno is a dev dependency).`);
  return new Promise((resolve, reject) => {
    const child = spawn(DENO, ['run', '--no-prompt', '--sloppy-imports', ...permissions, SCRIPT, folder], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

describe.skipIf(process.platform === 'win32')('FileSecretStore on Deno', { timeout: budget(60_000) }, () => {
  it('without --allow-sys the message says which permission is missing; with --allow-sys=uid it opens', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'launcher-auth-deno-'));
    onTestFinished(() => rm(folder, { recursive: true, force: true }));
    const base = ['--allow-read', `--allow-write=${folder}`];
    expect(await deno(base, folder)).toBe(
      `ERR_STORE_IO: Cannot read the secret file ${join(folder, 'secret.json')}: an unexpected error: ` +
        'Requires sys access to "uid", run again with the --allow-sys flag.\n',
    );
    expect(await deno([...base, '--allow-sys=uid'], folder)).toBe('opened\n');
  });
});
