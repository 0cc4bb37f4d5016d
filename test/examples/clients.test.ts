// The README's script clients (examples/clients/), run as a user runs them against the demo's automation API:
// the token works (also pasted with its `Bearer ` prefix), the token from before "Regenerate token" gets the hint, and no output holds a token.
import { spawn, spawnSync } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { createApiServer } from '../../examples/demo/api.ts';
import { deadline } from '../support/poll.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTHON = '/usr/bin/python3';
const REQUIRED = process.env.LAUNCHER_AUTH_REQUIRE_SERVICES === '1';
const hasRequests = spawnSync(PYTHON, ['-c', 'import requests'], { stdio: 'ignore' }).status === 0;

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

function runScript(command: string, script: string, env: Record<string, string>): Promise<Ran> {
  return new Promise((resolve, reject) => {
    // Only what the script needs: the user's tokens in this process's environment stay out of it.
    const child = spawn(command, [script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
    const cancel = deadline(15_000, () => child.kill('SIGKILL'));
    child.on('error', reject);
    child.on('close', (code) => {
      cancel();
      resolve({ code, out, err });
    });
  });
}

let url = '';
let authority: TokenAuthority;

beforeAll(async () => {
  authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  const server: Server = createApiServer(authority);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await authority.close();
  };
});

/** Runs a client with the current token, then with the token that the next "Regenerate token" makes stale. */
async function expectClient(command: string, script: string, listed: RegExp): Promise<void> {
  const token = authority.issue();
  const ok = await runScript(command, script, { LAUNCHER_URL: url, LAUNCHER_TOKEN: `${token}\n` });
  expect(ok.err).toBe('');
  expect(ok.code).toBe(0);
  expect(ok.out.startsWith('health: 200\n')).toBe(true);
  expect(ok.out).toMatch(listed);

  const fresh = await authority.rotate();
  // Pasted as a whole Authorization value: the prefix is recognised, not sent twice.
  const prefixed = await runScript(command, script, { LAUNCHER_URL: url, LAUNCHER_TOKEN: ` Bearer ${fresh}\n` });
  expect(prefixed.err).toBe('');
  expect(prefixed.code).toBe(0);
  expect(prefixed.out).toMatch(listed);
  const stale = await runScript(command, script, { LAUNCHER_URL: url, LAUNCHER_TOKEN: token });
  expect(stale.code).toBe(1);
  expect(stale.out).toBe('health: 200\n');
  expect(stale.err.trim()).toBe("401: copy the token from the launcher's settings again (was it regenerated?)");
  // A boolean, so that a failure does not print a token.
  expect(
    [ok, prefixed, stale].some(
      (ran) => `${ran.out}${ran.err}`.includes(token) || `${ran.out}${ran.err}`.includes(fresh),
    ),
  ).toBe(false);
}

describe('calling the API from scripts', () => {
  it('Node fetch (examples/clients/call-api.mjs)', async () => {
    await expectClient(process.execPath, 'examples/clients/call-api.mjs', /apps: \[/);
  });

  it.skipIf(!hasRequests && !REQUIRED)(
    `Python requests (examples/clients/call-api.py)${hasRequests ? '' : ': skipped, /usr/bin/python3 has no requests (apt-get install python3-requests)'}`,
    async () => {
      expect(
        hasRequests,
        `${PYTHON} with requests is required (LAUNCHER_AUTH_REQUIRE_SERVICES=1): apt-get install python3-requests`,
      ).toBe(true);
      await expectClient(PYTHON, 'examples/clients/call-api.py', /\{'apps': \[/);
    },
  );
});
