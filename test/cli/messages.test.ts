// launcher-auth check's one-line answers to the usual set-up mistakes: each says what is wrong and what to do,
// in place of a table of failures that only hints at the cause.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { startDemo } from '../../examples/demo/main.ts';
import { EXIT } from '../../src/cli/main.js';
import { runCli } from './run.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function authority(): Promise<TokenAuthority> {
  const opened = await TokenAuthority.open({ store: new MemorySecretStore() });
  cleanups.push(() => opened.close());
  return opened;
}

/** A plain-HTTP host wired as the README wires one: GET /health open, every other path behind the token. */
async function api(auth: TokenAuthority): Promise<string> {
  const handler: RequestListener = withAuth(auth, (_req, res) => res.end('ok'), {
    health: (_req, res) => res.end('ok'),
  });
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('launcher-auth check: one line for a mistake with one cause', () => {
  it('a token given with "Bearer " in front, on the command line or in the variable, is a usage error', async () => {
    const auth = await authority();
    const url = await api(auth);
    const message =
      'starts with "Bearer": give the token alone, the check sends "Bearer <token>" itself. See launcher-auth --help.\n';
    const flag = await runCli('check', url, '--token', `Bearer ${auth.issue()}`);
    expect(flag).toMatchObject({ code: EXIT.usage, out: '', err: `launcher-auth: --token ${message}` });
    process.env.LAUNCHER_AUTH_CLI_TEST_TOKEN = `bearer  ${auth.issue()}\n`;
    onTestFinished(() => void delete process.env.LAUNCHER_AUTH_CLI_TEST_TOKEN);
    const env = await runCli('check', url, '--token-env', 'LAUNCHER_AUTH_CLI_TEST_TOKEN');
    expect(env).toMatchObject({
      code: EXIT.usage,
      out: '',
      err: `launcher-auth: the environment variable LAUNCHER_AUTH_CLI_TEST_TOKEN ${message}`,
    });
    const previous = await runCli('check', url, '--token', auth.issue(), '--previous', `Bearer ${auth.issue()}`);
    expect(previous).toMatchObject({ code: EXIT.usage, err: `launcher-auth: --previous ${message}` });
    // The same token alone passes.
    expect((await runCli('check', url, '--token', auth.issue())).code).toBe(EXIT.ok);
  });

  it('a token with a space or a line break inside is a usage error', async () => {
    const auth = await authority();
    const token = auth.issue();
    const broken = `${token.slice(0, 20)}\n${token.slice(20)}`;
    const result = await runCli('check', await api(auth), '--token', broken);
    expect(result).toMatchObject({
      code: EXIT.usage,
      out: '',
      err: 'launcher-auth: --token has a space or a line break inside, which no token has: copy the token again. See launcher-auth --help.\n',
    });
  });

  it('https:// against the plain-HTTP API: one line that says to use http://, no OpenSSL dump', async () => {
    const auth = await authority();
    const url = await api(auth);
    const host = new URL(url).host;
    const result = await runCli('check', `https://${host}/`, '--token', auth.issue(), '--timeout', '5000');
    expect(result).toMatchObject({
      code: EXIT.checkFailed,
      out: '',
      err: `launcher-auth: https://${host} does not speak TLS: the automation API is plain HTTP on loopback; use http://${host}.\n`,
    });
  });

  it('a base URL with a path, which goes before /health too: one line that names the root and --path', async () => {
    const auth = await authority();
    const url = await api(auth);
    const result = await runCli('check', `${url}/apps`, '--token', auth.issue());
    expect(result).toMatchObject({
      code: EXIT.checkFailed,
      out: '',
      err:
        `launcher-auth: GET /apps/health got 401: the base URL's path /apps goes before every path checked; ` +
        `give the API's root as <base-url> (${url}) and the protected path as --path /apps.\n`,
    });
    // What the line says to run passes.
    const fixed = await runCli('check', url, '--token', auth.issue(), '--path', '/apps');
    expect(fixed.code).toBe(EXIT.ok);
    expect(fixed.out.endsWith('12 passed, 0 failed\n')).toBe(true);
  });

  it("the demo's settings page in place of its API: one line about the 403s, not twelve FAIL lines", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'launcher-auth-cli-demo-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const demo = await startDemo({ apiPort: 0, settingsPort: 0, dataDir });
    cleanups.push(() => demo.close());
    const token = demo.authority.issue();
    const result = await runCli('check', demo.settingsUrl, '--token', token);
    expect(result).toMatchObject({
      code: EXIT.checkFailed,
      out: '',
      err:
        `launcher-auth: every request got 403, with the token or without: ${demo.settingsUrl} is not the automation API ` +
        `(the demo's settings page answers 403 to everyone but its owner's browser); ` +
        `give the API's URL (the demo's is http://127.0.0.1:7878).\n`,
    });
    const api = await runCli('check', demo.apiUrl, '--token', token, '--path', '/apps');
    expect(api.code).toBe(EXIT.ok);
  });
});
