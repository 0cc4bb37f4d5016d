// examples/refusal-log.ts over a real socket: one line per client address per interval, the words a user can act
// on ("from before the last Regenerate"), a bounded map, and never the token.
import { afterEach, describe, expect, it } from 'vitest';
import type { RejectInfo } from 'launcher-auth';
import { refusalLog, start } from '../../examples/refusal-log.ts';

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
    const from = (remoteAddress: string | undefined): RejectInfo => ({ method: 'GET', path: '/', reason: 'invalid', remoteAddress });
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
