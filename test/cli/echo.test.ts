// No argument that could be a token reaches the output of launcher-auth: every error path of every command, with
// a token-shaped value in each place a value goes (command, option name, path, URL, variable name and value).
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { EXIT } from '../../src/cli/main.js';
import { runCli } from './run.js';

let authority: TokenAuthority;
let folder = '';
const servers: Array<ReturnType<typeof createServer>> = [];
/** A host wired with withAuth, one that refuses everything with 403, and a port where nothing listens. */
const urls = { api: '', forbidding: '', closed: '' };

async function listen(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'launcher-auth-cli-echo-'));
  authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  urls.api = await listen(withAuth(authority, (_req, res) => res.end('ok'), { health: (_req, res) => res.end('ok') }));
  urls.forbidding = await listen((_req, res) => res.writeHead(403).end());
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  urls.closed = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
});

afterAll(async () => {
  for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
  await authority.close();
  await rm(folder, { recursive: true, force: true });
});

/** Every error path, given the value `t` to put where a value goes. */
function errorPaths(t: string): string[][] {
  const host = new URL(urls.api).host;
  return [
    [t],
    ['token', t],
    ['rotate', '--store', 'secret.json', t],
    ['token', `--${t}`],
    ['token', `-${t}`],
    ['token', '--store', 'secret.json', `--init=${t}`],
    ['token', `--store=${t}`, '--keyring', 'service/account'],
    ['token', '--store', join(folder, t)],
    ['rotate', '--store', join(folder, t, 'secret.json')],
    ['token', '--store', join(folder, 'folders', t)],
    ['token', '--keyring', t],
    ['rotate', '--keyring', `${t}/`],
    ['token', '--redis', t],
    ['token', '--redis', `redis://127.0.0.1:1/${t}`],
    ['token', '--redis', `redis://launcher:${t}@127.0.0.1:1`],
    ['rotate', '--redis', 'redis://127.0.0.1:1', '--redis-key', t],
    ['token', '--redis-key', t],
    ['check', t],
    ['check', `--${t}`],
    ['check', urls.closed, t, '--token', t],
    ['check', urls.api],
    ['check', urls.api, '--token-env', t],
    ['check', urls.api, '--token', t, '--previous-env', t],
    ['check', urls.api, '--token', t, '--token-env', 'HOME'],
    ['check', urls.api, '--token', `Bearer ${t}`],
    ['check', urls.api, '--token', `${t} ${t}`],
    ['check', urls.api, '--token', t, '--path', t],
    ['check', urls.api, '--token', t, `--health-path=${t}`],
    ['check', urls.api, '--token', t, '--timeout', t],
    ['check', `http://launcher:${t}@${host}`, '--token', t],
    ['check', `${urls.closed}/${t}?${t}#${t}`, '--token', t],
    ['check', `https://${host}/${t}`, '--token', t],
    ['check', `${urls.api}/${t}`, '--token', t],
    ['check', urls.api, '--token', t, '--path', `/${t}`, '--health-path', `/${t}`],
    ['check', urls.forbidding, '--token', t, '--path', `/${t}`],
  ];
}

describe('launcher-auth never prints an argument that could be a token', () => {
  it.each([
    ['a token of this host', () => authority.issue()],
    ['the same token after "Bearer "', () => `Bearer ${authority.issue()}`],
    [
      'a token of the same shape signed by nobody',
      () =>
        `${randomBytes(27).toString('base64url')}.${randomBytes(30).toString('base64url')}.${randomBytes(32).toString('base64url')}`,
    ],
    ['a key as a secret file holds it', () => 'hQ2vX9kR4mT7wZ1bN8cF3jL6pS0yD5gA2eK9uV4xB7s'],
  ])('%s, in every place of every error path', async (_what, value) => {
    const t = value();
    // The value, and each part of it long enough to matter on its own (a JWT's header, claims or signature).
    const needles = [t, ...t.split(/[\s.]+/).filter((part) => part.length >= 8 && part !== 'Bearer')];
    await mkdir(join(folder, 'folders', t), { recursive: true });
    process.env['LAUNCHER_AUTH_CLI_ECHO'] = `Bearer ${t}`;
    const leaks: string[] = [];
    for (const argv of errorPaths(t)) {
      const result = await runCli(...argv);
      const { out, err } = result.raw();
      // Each is an error path, and each says something.
      expect(result.code === EXIT.ok || `${out}${err}` === '').toBe(false);
      if (needles.some((needle) => out.includes(needle) || err.includes(needle))) {
        leaks.push(JSON.stringify(argv.map((arg) => arg.split(t).join('<value>'))));
      }
    }
    const fromVariable = await runCli('check', urls.api, '--token-env', 'LAUNCHER_AUTH_CLI_ECHO');
    expect(fromVariable.code).toBe(EXIT.usage);
    if (needles.some((needle) => `${fromVariable.raw().out}${fromVariable.raw().err}`.includes(needle)))
      leaks.push('--token-env');
    delete process.env['LAUNCHER_AUTH_CLI_ECHO'];
    // The argument lists with the value replaced: never the value itself.
    expect(leaks).toEqual([]);
  });
});
