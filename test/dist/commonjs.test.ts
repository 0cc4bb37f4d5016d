// The README's CommonJS quick start (examples/readme/commonjs.cjs) run by plain Node, as a CommonJS user runs it:
// `require('launcher-auth')` resolves through package.json `exports` to the built dist/.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { deadline } from '../support/poll.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/readme/commonjs.cjs', import.meta.url));
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('the CommonJS quick start', () => {
  it('serves with require() and no top-level await: the printed curl line works, no token gets the empty 401', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'launcher-auth-commonjs-'));
    cleanups.push(() => rm(cwd, { recursive: true, force: true }));
    // PORT unset: a free port, which the example prints in its curl line; its secret goes under XDG_CONFIG_HOME.
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: cwd };
    delete env['PORT'];
    const child = spawn(process.execPath, [EXAMPLE], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.push(() => stop(child));
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));

    const line = await new Promise<RegExpExecArray>((resolve, reject) => {
      const cancel = deadline(15_000, () => reject(new Error('no curl line in time')));
      const look = (): void => {
        const match = /^curl -H "Authorization: Bearer ([\w.-]+)" (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(output);
        if (match !== null) {
          cancel();
          resolve(match);
        }
      };
      child.stdout?.on('data', look);
      child.once('exit', (code) => {
        cancel();
        reject(new Error(`the example exited with ${code} before printing its curl line`));
      });
    });
    const [, token, url] = line as unknown as [string, string, string];

    const accepted = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    expect(accepted.status).toBe(200);
    expect(await accepted.text()).toMatch(/^hello, key \S+$/);
    const refused = await fetch(url);
    expect(refused.status).toBe(401);
    expect((await refused.arrayBuffer()).byteLength).toBe(0);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="launcher"');
    expect((await fetch(new URL('/health', url))).status).toBe(200);
    // It kept its secret where it says, in the folder it was started from, private to the user.
    expect((await stat(join(cwd, 'my-launcher/secret.json'))).mode & 0o777).toBe(0o600);
  });
});
