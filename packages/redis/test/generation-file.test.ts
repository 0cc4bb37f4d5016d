// The generation file (`generationFile`): where it goes, what it holds (a generation and an id, never a key), how
// it is written (atomically, 0600 in a 0700 folder, never lowered, never over a damaged file), a damaged file
// refused by name, a folder that cannot be written told once; and the option's checks.
import { spawnSync } from 'node:child_process';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { deploymentOf } from '../src/connections.js';
import { defaultGenerationFile, generationFileAt, stateFolder } from '../src/generation-file.js';
import { authErrorOf } from '../../../test/support/async.js';
import { SKIP_REASON, sharedRedis } from '../../../test/support/redis-server.js';
import { OTHER_USER_MISSING, otherUser } from '../../../test/support/other-user.js';

const POSIX = process.platform !== 'win32';

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-generation-file-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('where the generation file goes', () => {
  it('the per-user state folder of each system, $XDG_STATE_HOME first', () => {
    expect(stateFolder({ XDG_STATE_HOME: '/x/state' }, 'linux', '/home/u')).toBe('/x/state');
    expect(stateFolder({ XDG_STATE_HOME: 'relative' }, 'linux', '/home/u')).toBe(join('/home/u', '.local', 'state'));
    expect(stateFolder({}, 'linux', '/home/u')).toBe(join('/home/u', '.local', 'state'));
    expect(stateFolder({}, 'darwin', '/Users/u')).toBe(join('/Users/u', 'Library', 'Application Support'));
    expect(stateFolder({ LOCALAPPDATA: 'C:\\Users\\u\\AppData\\Local' }, 'win32', 'C:\\Users\\u')).toBe(
      'C:\\Users\\u\\AppData\\Local',
    );
  });

  it('one file per key and deployment, under launcher-auth/redis/', () => {
    const file = defaultGenerationFile('launcher-auth:secret', '127.0.0.1:6379/0', '/state');
    expect(file).toMatch(/^\/state\/launcher-auth\/redis\/[0-9a-f]{32}\.json$/);
    expect(defaultGenerationFile('launcher-auth:secret', '127.0.0.1:6379/0', '/state')).toBe(file);
    expect(defaultGenerationFile('other', '127.0.0.1:6379/0', '/state')).not.toBe(file);
    expect(defaultGenerationFile('launcher-auth:secret', '127.0.0.1:6380/0', '/state')).not.toBe(file);
    expect(defaultGenerationFile('launcher-auth:secret', '127.0.0.1:6379/1', '/state')).not.toBe(file);
  });

  it("names the deployment by the client's configuration, never its password", () => {
    const plain = (options: object): object => ({ options, eval() {}, sendCommand() {}, duplicate() {} });
    expect(deploymentOf(plain({ url: 'redis://user:pw@10.0.0.5:7000/3' }))).toBe('10.0.0.5:7000/3');
    expect(deploymentOf(plain({ url: 'redis://10.0.0.5' }))).toBe('10.0.0.5:6379/0');
    expect(deploymentOf(plain({ socket: { path: '/run/redis.sock' }, database: 2 }))).toBe('/run/redis.sock/2');
    const cluster = (rootNodes: object[]): object => ({
      _options: { rootNodes },
      getNodeClientForKey() {},
      nodeClient() {},
      sendCommand() {},
    });
    const a = deploymentOf(cluster([{ url: 'redis://a:1' }, { socket: { host: 'b', port: 2 } }]));
    expect(a).toBe('cluster a:1,b:2');
    expect(deploymentOf(cluster([{ socket: { host: 'b', port: 2 } }, { url: 'redis://a:1' }]))).toBe(a);
  });
});

describe('the generation file', () => {
  it('holds the generation and the id only, 0600 in a 0700 folder, and reads them back', async () => {
    const path = join(await folder(), 'state', 'launcher-auth', 'redis', 'g.json');
    const told: string[] = [];
    const file = generationFileAt(path, (message) => told.push(message));
    expect(await file.read()).toBeUndefined();
    await file.write({ generation: 3, id: 'abc' });
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ generation: 3, id: 'abc' });
    expect(await file.read()).toEqual({ generation: 3, id: 'abc' });
    if (POSIX) {
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect((await stat(join(path, '..'))).mode & 0o777).toBe(0o700);
    }
    // No temporary file left beside it.
    expect(await readdir(join(path, '..'))).toEqual(['g.json']);
    expect(told).toEqual([]);
  });

  it('is never lowered by a process that remembers an older record', async () => {
    const path = join(await folder(), 'g.json');
    const first = generationFileAt(path, () => undefined);
    const second = generationFileAt(path, () => undefined);
    await first.write({ generation: 5, id: 'five' });
    await second.write({ generation: 4, id: 'four' });
    expect(await first.read()).toEqual({ generation: 5, id: 'five' });
    await second.write({ generation: 6, id: 'six' });
    expect(await first.read()).toEqual({ generation: 6, id: 'six' });
  });

  it('a damaged file: read() rejects with ERR_STORE_CORRUPT naming it; a write leaves it untouched and warns once', async () => {
    const path = join(await folder(), 'g.json');
    await writeFile(path, '{"generation":"x"}', { mode: 0o600 });
    const told: string[] = [];
    const file = generationFileAt(path, (message) => told.push(message));
    const error = await authErrorOf(file.read());
    expect(error.code).toBe('ERR_STORE_CORRUPT');
    expect(error.message).toContain(path);
    await file.write({ generation: 2, id: 'two' });
    await file.write({ generation: 3, id: 'three' });
    expect(await readFile(path, 'utf8')).toBe('{"generation":"x"}');
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(path);
  });

  it('a folder that cannot be created: one warning naming the file (its control characters escaped), then nothing remembered', async () => {
    // A file where the folder should be: refused whoever runs the test, root included.
    const blocker = join(await folder(), 'block\x1b]52;c;x\x07er');
    await writeFile(blocker, '');
    const path = join(blocker, 'sub', 'g.json');
    const told: string[] = [];
    const file = generationFileAt(path, (message) => told.push(message));
    await file.write({ generation: 2, id: 'two' });
    await file.write({ generation: 3, id: 'three' });
    expect(await file.read()).toBeUndefined();
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(path.replace('\x1b', '\\x1b').replace('\x07', '\\x07'));
  });
});

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore with a generation file', () => {
  const shared = sharedRedis();

  it('refuses a bad `generationFile` with a TypeError naming it', () => {
    const { client } = shared;
    for (const bad of ['relative/g.json', '', 42, true, '/a\0b'])
      expect(() => new RedisSecretStore({ client, generationFile: bad as never })).toThrow(/`generationFile`/);
    expect(() => new RedisSecretStore({ client, generationFile: false })).not.toThrow();
    expect(() => new RedisSecretStore({ client, generationFile: join(tmpdir(), 'g.json') })).not.toThrow();
  });

  it('open() on a damaged generation file rejects with ERR_STORE_CORRUPT naming it, and leaves it as it was', async () => {
    const path = join(await folder(), 'g.json');
    await writeFile(path, 'not json', { mode: 0o600 });
    const store = new RedisSecretStore({ client: shared.client, key: 'generation-file:damaged', generationFile: path });
    const error = await authErrorOf(TokenAuthority.open({ store }));
    expect(isLauncherAuthError(error, 'ERR_STORE_CORRUPT')).toBe(true);
    expect(error.message).toContain(path);
    expect(await readFile(path, 'utf8')).toBe('not json');
  });

  it('remembers the record it trusted, and the one it saved; by default under $XDG_STATE_HOME', async () => {
    const { client } = shared;
    const key = 'generation-file:default';
    const store = new RedisSecretStore({ client, key, leaseMs: 1000, renewInterval: 200, driftMargin: 100 });
    const authority = await TokenAuthority.open({ store });
    onTestFinished(() => authority.close());
    const home = process.env['XDG_STATE_HOME'] ?? '';
    const files = await readdir(join(home, 'launcher-auth', 'redis'));
    const contents = await Promise.all(
      files.map(async (name) => JSON.parse(await readFile(join(home, 'launcher-auth', 'redis', name), 'utf8'))),
    );
    expect(contents).toContainEqual({ generation: 1, id: authority.keyId });
    await authority.rotate();
    const after = await Promise.all(
      files.map(async (name) => JSON.parse(await readFile(join(home, 'launcher-auth', 'redis', name), 'utf8'))),
    );
    expect(after).toContainEqual({ generation: 2, id: authority.keyId });
  });
});

describe.skipIf(SKIP_REASON !== undefined || OTHER_USER_MISSING !== undefined || !POSIX)(
  "the generation file in a folder another user can write: the secret file's checks",
  () => {
    const shared = sharedRedis();
    const PLANTED = '{"generation":9007199254740000,"id":"planted"}\n';

    /** A shared state folder, as /tmp is (sticky, writable by all), and the generation file's path under it. */
    async function sharedState(): Promise<{ state: string; path: string }> {
      const parent = await folder();
      await chmod(parent, 0o755); // the other user reaches the shared folder through it
      const state = join(parent, 'state');
      await mkdir(state, { mode: 0o1777 });
      await chmod(state, 0o1777);
      return { state, path: join(state, 'launcher-auth', 'redis', 'g.json') };
    }

    /** Runs `script` (CommonJS, with `path` bound) as the other local user. */
    function asOtherUser(script: string, path: string): void {
      const { uid, gid } = otherUser();
      const run = spawnSync(process.execPath, ['-e', `const path = ${JSON.stringify(path)};\n${script}`], {
        uid,
        gid,
        cwd: '/',
        encoding: 'utf8',
      });
      expect(run.status).toBe(0);
    }

    it('a generation planted by another user (9007199254740000): open() refuses with ERR_STORE_PERMISSIONS naming it, and leaves it', async () => {
      const { path } = await sharedState();
      asOtherUser(
        `const fs = require('node:fs'); fs.mkdirSync(require('node:path').dirname(path), { recursive: true, mode: 0o700 });` +
          `fs.writeFileSync(path, ${JSON.stringify(PLANTED)}, { mode: 0o600 });`,
        path,
      );
      const store = new RedisSecretStore({
        client: shared.client,
        key: 'generation-file:planted',
        generationFile: path,
      });
      const error = await authErrorOf(TokenAuthority.open({ store }));
      expect(error.code).toBe('ERR_STORE_PERMISSIONS');
      expect(error.message).toContain(path);
      expect(await readFile(path, 'utf8')).toBe(PLANTED);
    });

    it('a FIFO at the path: open() refuses at once with ERR_STORE_PERMISSIONS naming it', async () => {
      // In a folder of this user's own, so that the file itself is what is judged.
      const path = join(await folder(), 'g.json');
      expect(spawnSync('mkfifo', ['-m', '600', path]).status).toBe(0);
      const store = new RedisSecretStore({ client: shared.client, key: 'generation-file:fifo', generationFile: path });
      const error = await authErrorOf(TokenAuthority.open({ store }));
      expect(error.code).toBe('ERR_STORE_PERMISSIONS');
      expect(error.message).toContain(path);
      expect((await lstat(path)).isFIFO()).toBe(true);
    });

    it('a device, a link, a file of another user, one open to others, an oversized one: each refused by name, never replaced', async () => {
      const dir = await folder();
      const valid = join(dir, 'valid.json');
      await writeFile(valid, '{"generation":1,"id":"one"}\n', { mode: 0o600 });
      const { uid } = otherUser();
      const plants: Array<[string, (path: string) => Promise<unknown>]> = [
        ['a device', async (path) => expect(spawnSync('mknod', ['-m', '600', path, 'c', '1', '3']).status).toBe(0)],
        ['a link', (path) => symlink(valid, path)],
        [
          'another user',
          async (path) => (
            await writeFile(path, '{"generation":1,"id":"one"}\n', { mode: 0o600 }),
            chown(path, uid, 0)
          ),
        ],
        ['open to others', (path) => writeFile(path, '{"generation":1,"id":"one"}\n', { mode: 0o644 })],
        ['oversized', (path) => writeFile(path, `{"generation":1,"id":"one"}${' '.repeat(8192)}\n`, { mode: 0o600 })],
      ];
      const refused: string[] = [];
      for (const [name, plant] of plants) {
        const path = join(dir, `${name.replaceAll(' ', '-')}.json`);
        await plant(path);
        const before = await lstat(path);
        const file = generationFileAt(path, () => undefined);
        const error = await authErrorOf(file.read());
        await file.write({ generation: 2, id: 'two' });
        const after = await lstat(path);
        if (error.code === 'ERR_STORE_PERMISSIONS' && error.message.includes(path) && after.ino === before.ino)
          refused.push(name);
      }
      expect(refused).toEqual(plants.map(([name]) => name));
    });
  },
);
