// launcher-auth token and rotate with --redis <url>, against a real redis-server: a rotation through the CLI is
// followed by a running instance (a RedisSecretStore in this process) as one made inside it would be.
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { EXIT } from '../../src/cli/main.js';
import { SKIP_REASON, connectedClient, freePort, startRedis, type RedisServer } from '../support/redis-server.js';
import { until } from '../support/poll.js';
import { JWT_SHAPED, runCli } from './run.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The rollback marker as @launcher-auth/redis stores it: the record's place held by an id without a key. */
const marker = (id: string, generation: number, prev: string): string =>
  JSON.stringify({ rolledBack: true, id: `rollback:${id}`, generation, prev });
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

/** What rotate --redis says before it may wait a lease: why. */
const WAIT_NOTE =
  'launcher-auth: waiting up to 5.25 s for the running instances on this key to accept the new token: a command that ' +
  "has just connected cannot tell that no other instance runs, so it waits out their lease (RedisSecretStore's leaseMs).\n";

let redis: RedisServer;
let keys = 0;
/** A Redis key of its own for each test. */
const freshKey = (): string => `launcher-auth-cli-test-${++keys}`;

/** An instance of a service on `key`, as a launcher runs one; closed when the test ends. */
async function running(key: string): Promise<TokenAuthority> {
  const client = await connectedClient(redis.url);
  const authority = await TokenAuthority.open({ store: new RedisSecretStore({ client, key }) });
  onTestFinished(async () => {
    await authority.close();
    client.destroy();
  });
  return authority;
}

/** The CLI as a child process, as `npx launcher-auth` runs it: its exit code and output, tokens redacted. */
function child(args: string[], imports: string[] = []): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const spawned = spawn(
      process.execPath,
      ['--import', TSX_LOADER, ...imports.flatMap((i) => ['--import', i]), 'src/cli/main.ts', ...args],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    spawned.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    spawned.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
    spawned.on('error', reject);
    spawned.on('close', (code) =>
      resolve({ code, out: out.replace(JWT_SHAPED, '<token>'), err: err.replace(JWT_SHAPED, '<token>') }),
    );
  });
}

describe.skipIf(SKIP_REASON !== undefined)(
  `launcher-auth --redis${SKIP_REASON === undefined ? '' : ` (skipped: ${SKIP_REASON})`}`,
  () => {
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.kill();
    });

    it('token: no record is a store error naming the server and key; --init creates the one a running instance uses', async () => {
      const key = freshKey();
      const none = await runCli('token', '--redis', redis.url, '--redis-key', key);
      expect(none).toMatchObject({ code: EXIT.store, out: '' });
      expect(none.err).toBe(
        `launcher-auth: no secret in Redis at ${redis.url} under the key "${key}" (use --init to create one).\n`,
      );

      const created = await runCli('token', '--redis', redis.url, '--redis-key', key, '--init');
      expect(created).toMatchObject({ code: EXIT.ok, out: '<token>\n', err: '' });
      const instance = await running(key);
      expect(created.raw().out).toBeSameToken(`${instance.issue()}\n`);
      const again = await runCli('token', '--redis', redis.url, '--redis-key', key);
      expect(again.raw().out === created.raw().out).toBe(true);
    });

    it('leaves no entry in the table of instances that a rotation waits for', async () => {
      const key = freshKey();
      await runCli('token', '--redis', redis.url, '--redis-key', key, '--init');
      await runCli('rotate', '--redis', redis.url, '--redis-key', key);
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      const tables = (await client.keys('*')).filter((name) => name.includes(key) && name.endsWith(':instances'));
      expect(tables.length).toBeLessThanOrEqual(1);
      // The command joined the table for its rotation and left it at close: only the table's own epoch stays.
      for (const table of tables) expect(await client.hKeys(table)).toEqual(['@epoch']);
    });

    it('rotate: when it prints the new token, the running instance accepts it and refuses the old one', async () => {
      const key = freshKey();
      const missing = await runCli('rotate', '--redis', redis.url, '--redis-key', key);
      expect(missing.err).toBe(
        `launcher-auth: no secret in Redis at ${redis.url} under the key "${key}" ` +
          `(create one with: launcher-auth token --redis ${redis.url} --redis-key ${key} --init).\n`,
      );
      await runCli('token', '--redis', redis.url, '--redis-key', key, '--init');
      const instance = await running(key);
      const old = instance.issue();
      let followed = 0;
      instance.onRotate(() => followed++);

      const rotated = await runCli('rotate', '--redis', redis.url, '--redis-key', key);
      expect(rotated).toMatchObject({ code: EXIT.ok, out: '<token>\n', err: WAIT_NOTE });
      const fresh = rotated.raw().out.trim();
      // rotate() resolved in the CLI only once every live instance had the new key: nothing to wait for here.
      expect(followed).toBe(1);
      expect(instance.issue()).toBeSameToken(fresh);
      expect((await instance.verify(fresh)).ok).toBe(true);
      expect(await instance.verify(old)).toEqual({ ok: false, reason: 'rotated' });
    });

    it("rotate over a rollback marker (Redis lost the secret) replaces it, as the settings window's Regenerate does", async () => {
      const key = freshKey();
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      // What the instances write when Redis came back without the secret and none could write it back.
      await client.set(key, marker('lost', 3, 'before'));
      const refused = await runCli('token', '--redis', redis.url, '--redis-key', key);
      expect(refused.code).toBe(EXIT.store);
      expect(refused.err).toMatch(/holds an older secret than one already in use/);

      const rotated = await runCli('rotate', '--redis', redis.url, '--redis-key', key);
      expect(rotated).toMatchObject({
        code: EXIT.ok,
        out: '<token>\n',
        err: `launcher-auth: the secret in Redis at ${redis.url} under the key "${key}" was lost (Redis went back to an older state), so every token is refused; a new one replaces it.\n${WAIT_NOTE}`,
      });
      const instance = await running(key);
      expect(instance.issue()).toBeSameToken(rotated.raw().out.trim());
      expect((await instance.verify(instance.issue())).ok).toBe(true);
      expect((await runCli('token', '--redis', redis.url, '--redis-key', key)).raw().out === rotated.raw().out).toBe(
        true,
      );
    });

    it('rotate over the marker while an instance that opened over it refuses every token: exit 0, and that instance takes the new token', async () => {
      const key = freshKey();
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      await client.set(key, marker('lost', 4, 'before'));
      const errors: string[] = [];
      const instanceClient = await connectedClient(redis.url);
      const instance = await TokenAuthority.open({
        store: new RedisSecretStore({ client: instanceClient, key }),
        onStoreError: (error) => errors.push(isLauncherAuthError(error) ? error.code : 'other'),
      });
      onTestFinished(async () => {
        await instance.close();
        instanceClient.destroy();
      });
      expect(errors).toEqual(['ERR_STORE_ROLLBACK']);
      expect(await instance.verify(instance.issue())).toEqual({ ok: false, reason: 'suspended' });

      const rotated = await runCli('rotate', '--redis', redis.url, '--redis-key', key);
      expect(rotated.code).toBe(EXIT.ok);
      const fresh = rotated.raw().out.trim();
      expect(await until(async () => (await instance.verify(fresh)).ok)).toBe(true);
      expect(instance.issue()).toBeSameToken(fresh);
      expect(errors).toEqual(['ERR_STORE_ROLLBACK']);
    });

    it('a machine that remembers a newer secret than Redis holds: token refuses the older one (exit 3), rotate replaces it', async () => {
      const key = freshKey();
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      expect((await runCli('token', '--redis', redis.url, '--redis-key', key, '--init')).code).toBe(EXIT.ok);
      const older = (await client.get(key)) ?? '';
      expect((await runCli('rotate', '--redis', redis.url, '--redis-key', key)).code).toBe(EXIT.ok);
      // Redis restored from a backup taken before that rotation.
      await client.set(key, older);
      const refused = await runCli('token', '--redis', redis.url, '--redis-key', key);
      expect(refused).toMatchObject({ code: EXIT.store, out: '' });
      expect(refused.err).toMatch(/holds an older secret than one already in use/);

      const rotated = await runCli('rotate', '--redis', redis.url, '--redis-key', key);
      expect(rotated.code).toBe(EXIT.ok);
      const instance = await running(key);
      expect(instance.issue()).toBeSameToken(rotated.raw().out.trim());
      expect((await instance.verify(instance.issue())).ok).toBe(true);
    });

    it("the default key is the store's default: an instance on RedisSecretStore's default follows a rotate without --redis-key", async () => {
      const created = await runCli('token', '--redis', redis.url, '--init');
      expect(created.code).toBe(EXIT.ok);
      const client = await connectedClient(redis.url);
      const instance = await TokenAuthority.open({ store: new RedisSecretStore({ client }) });
      onTestFinished(async () => {
        await instance.close();
        client.destroy();
      });
      expect(created.raw().out).toBeSameToken(`${instance.issue()}\n`);
      const rotated = await runCli('rotate', '--redis', redis.url);
      expect(rotated.code).toBe(EXIT.ok);
      expect(instance.issue()).toBeSameToken(rotated.raw().out.trim());
    });

    it('Redis not running: one line that names the server and asks whether it runs, exit 3', async () => {
      const port = await freePort();
      const result = await runCli('token', '--redis', `redis://127.0.0.1:${port}`, '--init');
      expect(result).toMatchObject({ code: EXIT.store, out: '' });
      expect(result.err).toMatch(
        new RegExp(
          `^launcher-auth: cannot reach Redis at redis://127\\.0\\.0\\.1:${port} \\(connect ECONNREFUSED [^)]+\\): is Redis running there\\?\\n$`,
        ),
      );
    });

    it('a URL with a password comes through --redis-env: it connects, and nothing printed holds the password', async () => {
      const key = freshKey();
      const password = `pw-${key}`;
      const client = await connectedClient(redis.url);
      onTestFinished(async () => {
        await client.sendCommand(['ACL', 'DELUSER', 'cli-env']);
        client.destroy();
      });
      await client.sendCommand(['ACL', 'SETUSER', 'cli-env', 'on', `>${password}`, '~*', '&*', '+@all']);
      process.env.LAUNCHER_AUTH_CLI_TEST_REDIS = `redis://cli-env:${password}@127.0.0.1:${redis.port}`;
      onTestFinished(() => void delete process.env.LAUNCHER_AUTH_CLI_TEST_REDIS);
      const missing = await runCli('rotate', '--redis-env', 'LAUNCHER_AUTH_CLI_TEST_REDIS', '--redis-key', key);
      expect(missing).toMatchObject({ code: EXIT.store, out: '' });
      expect(missing.err).toBe(
        `launcher-auth: no secret in Redis at redis://127.0.0.1:${redis.port} under the key "${key}" ` +
          `(create one with: launcher-auth token --redis-env LAUNCHER_AUTH_CLI_TEST_REDIS --redis-key ${key} --init).\n`,
      );
      const created = await runCli(
        'token',
        '--redis-env',
        'LAUNCHER_AUTH_CLI_TEST_REDIS',
        '--redis-key',
        key,
        '--init',
      );
      expect(created).toMatchObject({ code: EXIT.ok, out: '<token>\n', err: '' });
      expect((await running(key)).issue()).toBeSameToken(created.raw().out.trim());
    });

    it('as a child process: rotate prints the token and the process ends by itself', async () => {
      const key = freshKey();
      expect((await runCli('token', '--redis', redis.url, '--redis-key', key, '--init')).code).toBe(EXIT.ok);
      const instance = await running(key);
      const old = instance.issue();
      const rotated = await child(['rotate', '--redis', redis.url, '--redis-key', key]);
      expect(rotated).toEqual({ code: 0, out: '<token>\n', err: WAIT_NOTE });
      expect(instance.issue()).not.toBeSameToken(old);
    });
  },
);

describe.each(['redis', '@launcher-auth/redis'])('launcher-auth without the package %s installed', (missing) => {
  // A resolve hook that answers for the package as Node does for a package that is not installed.
  const hooks = `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier === ${JSON.stringify(missing)}) throw Object.assign(new Error('Cannot find package'), { code: 'ERR_MODULE_NOT_FOUND' });
      return next(specifier, context);
    }`)}`;
  const register = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(hooks)});`)}`;

  it('--store works (the Redis packages are loaded only for --redis), and --redis says what to install', async () => {
    const usage = await child(['token', '--store'], [register]);
    expect(usage).toEqual({
      code: 2,
      out: '',
      err: 'launcher-auth: --store needs a value. See launcher-auth --help.\n',
    });
    const absent = await child(['token', '--redis', 'redis://127.0.0.1:6379'], [register]);
    expect(absent).toEqual({
      code: EXIT.usage,
      out: '',
      err:
        'launcher-auth: --redis needs @launcher-auth/redis and redis installed beside launcher-auth ' +
        '(npm install @launcher-auth/redis redis). See launcher-auth --help.\n',
    });
  });
});
