// examples/refusal-log.ts over a real socket: one line per client address per interval, the words a user can act
// on ("from before the last Regenerate"), a bounded map, and never the token.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { RejectInfo } from 'launcher-auth';
import { refusalLog, start } from '../../examples/refusal-log.ts';
import { budget } from '../support/machine.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function status(url: string, token?: string): Promise<number> {
  const res = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  expect((await res.arrayBuffer()).byteLength).toBe(0);
  return res.status;
}

describe('examples/refusal-log.ts', () => {
  it('writes one line per client per minute, says a rotated-away token is one, and never the token', async () => {
    const lines: string[] = [];
    let clock = 0;
    const api = await start(0, { write: (line) => void lines.push(line), now: () => clock });
    cleanups.push(() => api.close());
    const old = api.authority.issue();
    await api.authority.rotate();

    for (let i = 0; i < 5; i += 1) expect(await status(`${api.url}/apps`, old)).toBe(401);
    expect(await status(`${api.url}/apps`)).toBe(401);
    expect(lines).toEqual(['a script at 127.0.0.1 still uses a token from before the last Regenerate: GET /apps']);

    clock += 59_999;
    expect(await status(`${api.url}/apps?q=1`)).toBe(401);
    expect(lines.length).toBe(1);
    clock += 1;
    expect(await status(`${api.url}/apps?q=1`)).toBe(401);
    expect(lines[1]).toBe('a client at 127.0.0.1 sent no token: GET /apps (6 more refusals since the last line)');
    expect(lines.length).toBe(2);
    expect(lines.some((line) => line.includes(old))).toBe(false);
  });

  it('remembers at most maxClients addresses, forgetting the one written about least recently', () => {
    const lines: string[] = [];
    const log = refusalLog({ write: (line) => void lines.push(line), maxClients: 2, now: () => 0 });
    const from = (remoteAddress: string | undefined): RejectInfo => ({
      method: 'GET',
      path: '/',
      reason: 'invalid',
      remoteAddress,
    });
    log(from('10.0.0.1'));
    log(from('10.0.0.2'));
    log(from('10.0.0.1')); // held back
    log(from('10.0.0.3')); // forgets 10.0.0.1, the least recently written
    log(from('10.0.0.1')); // a new line: it was forgotten
    log(from(undefined));
    expect(lines).toEqual([
      'a client at 10.0.0.1 sent a token this launcher never issued: GET /',
      'a client at 10.0.0.2 sent a token this launcher never issued: GET /',
      'a client at 10.0.0.3 sent a token this launcher never issued: GET /',
      'a client at 10.0.0.1 sent a token this launcher never issued: GET /',
      'a client at an unknown address sent a token this launcher never issued: GET /',
    ]);
  });
});

const REPO = fileURLToPath(new URL('../../', import.meta.url));
// tsx's loader by path, so that the child is one node process that one signal stops.
const TSX_LOADER = pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href;

describe('examples/refusal-log.ts, started as a user would', () => {
  it(
    'PORT=0 npx tsx examples/refusal-log.ts: refusals from one client give one line on stderr',
    async () => {
      const child = spawn(process.execPath, ['--import', TSX_LOADER, join(REPO, 'examples/refusal-log.ts')], {
        cwd: REPO,
        env: { ...process.env, PORT: '0', TSX_TSCONFIG_PATH: join(REPO, 'tsconfig.json') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const closed = once(child, 'close');
      cleanups.push(async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await closed;
      });
      let stdout = '';
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          // The whole banner: the URL, then the curl line with the same URL.
          const found = /listening on (http:\/\/127\.0\.0\.1:\d+);[^\n]*\ncurl -i \1\/apps\n/.exec(stdout)?.[1];
          if (found !== undefined) resolve(found);
        });
        child.once('exit', (code) => reject(new Error(`the example exited (${code}) before it listened: ${stderr}`)));
      });
      for (let i = 0; i < 3; i += 1) expect(await status(`${url}/apps`)).toBe(401);
      child.kill('SIGTERM');
      await closed;
      // onReject runs before each 401 is written, and stderr is a pipe (written synchronously): all of it is in.
      expect(stderr).toBe('a client at 127.0.0.1 sent no token: GET /apps\n');
    },
    budget(30_000),
  );
});
