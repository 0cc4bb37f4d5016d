// KeyringSecretStore against a real Secret Service: a private session bus and an unlocked gnome-keyring-daemon
// started here (test/support/secret-service.ts), never the user's own keyring. Skipped where the Debian packages
// are missing, failed there when LAUNCHER_AUTH_REQUIRE_SERVICES=1.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { isLauncherAuthError, TokenAuthority, type SecretRecord } from 'launcher-auth';
import { KeyringSecretStore } from 'launcher-auth/keyring';
import { checkSecretStore } from 'launcher-auth/testing';
import { start as startExample } from '../../examples/keyring.ts';
import { rejectionOf, until } from '../support/async.js';
import {
  secretServiceMissing,
  servicesRequired,
  startSecretService,
  useSecretService,
  type SecretService,
} from '../support/secret-service.js';
import { budget } from '../support/machine.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const missing = secretServiceMissing();

describe('KeyringSecretStore options', () => {
  it('a wrong option is a TypeError naming it', () => {
    const make = (options: unknown) => () => new KeyringSecretStore(options as { service: string; account: string });
    expect(make(undefined)).toThrow(TypeError);
    expect(make({ account: 'a' })).toThrow(/`service`/);
    expect(make({ service: '', account: 'a' })).toThrow(/`service`/);
    expect(make({ service: 's\n', account: 'a' })).toThrow(/`service`/);
    expect(make({ service: 's', account: 'x'.repeat(257) })).toThrow(/`account`/);
    expect(make({ service: 's', account: 7 })).toThrow(/`account`/);
    expect(make({ service: 's', account: 'a', pollInterval: 0 })).toThrow(/`pollInterval`/);
    expect(make({ service: 's', account: 'a', pollInterval: 1.5 })).toThrow(/`pollInterval`/);
    expect(make({ service: 's', account: 'a', timeout: -1 })).toThrow(/`timeout`/);
    expect(make({ service: 's', account: 'a', pollinterval: 100 })).toThrow(/unknown option `pollinterval`/);
    const store = new KeyringSecretStore({ service: 'com.example.launcher', account: 'automation' });
    expect([store.service, store.account]).toEqual(['com.example.launcher', 'automation']);
  });
});

describe.skipIf(missing !== undefined && !servicesRequired)(
  `KeyringSecretStore on a real Secret Service${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    const running = useSecretService();
    let service: SecretService;
    beforeAll(() => {
      service = running();
    });

    /** A store on a fresh, empty entry. */
    function fresh(options: { pollInterval?: number } = {}): KeyringSecretStore {
      return new KeyringSecretStore({
        service: `launcher-auth-test-${randomUUID()}`,
        account: 'automation',
        ...options,
      });
    }

    function lookup(store: KeyringSecretStore): string {
      const found = service.run('secret-tool', ['lookup', 'service', store.service, 'username', store.account]);
      return found.status === 0 ? found.stdout : '';
    }

    function put(store: KeyringSecretStore, text: string): void {
      const stored = service.run(
        'secret-tool',
        ['store', '--label=test', 'service', store.service, 'username', store.account],
        text,
      );
      expect(stored.status).toBe(0);
    }

    async function open(store: KeyringSecretStore): Promise<TokenAuthority> {
      const authority = await TokenAuthority.open({ store });
      onTestFinished(() => authority.close());
      return authority;
    }

    it('passes checkSecretStore on one entry, durability included', async () => {
      const service = `launcher-auth-test-${randomUUID()}`;
      const report = await checkSecretStore(() => new KeyringSecretStore({ service, account: 'automation' }), {
        sameBacking: true,
      });
      expect(report.cases.filter((row) => !row.ok)).toEqual([]);
      expect(report.ok).toBe(true);
    });

    it('stores one entry that `secret-tool search` shows, holding the same JSON as the secret file', async () => {
      const store = fresh();
      const authority = await open(store);
      const search = service.run('secret-tool', ['search', '--all', 'service', store.service]);
      expect(search.status).toBe(0);
      // Only the attribute lines: the "secret =" line holds the key.
      const attributes = `${search.stdout}\n${search.stderr}`
        .split('\n')
        .filter((line) => line.startsWith('attribute.'))
        .sort();
      expect(attributes).toEqual([`attribute.service = ${store.service}`, 'attribute.username = automation']);
      const entry = JSON.parse(lookup(store)) as Record<string, unknown>;
      expect(Object.keys(entry)).toEqual(['version', 'id', 'key', 'createdAt']);
      expect(entry.version).toBe(1);
      expect(entry.id).toBe(authority.keyId);
      expect(typeof entry.key === 'string' && Buffer.from(entry.key, 'base64url').byteLength === 32).toBe(true);
    });

    it('a rotation by another process (the CLI) is followed here within the poll interval; the old token is refused', async () => {
      const store = fresh({ pollInterval: 200 });
      const running = await open(store);
      const old = running.issue();
      const events: string[] = [];
      running.onRotate(({ keyId }) => events.push(keyId));
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'rotate', '--keyring', `${store.service}/${store.account}`],
        { cwd: root, env: service.env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      const rotated = out.trim();
      // Followed by polling: wait (bounded, never timed) for the running authority to adopt the new key.
      expect(await until(() => events.length > 0, 15_000, 20)).toBe(true);
      expect(events).toHaveLength(1);
      expect(events[0]).toBe(JSON.parse(lookup(store)).id);
      expect((await running.verify(rotated)).ok).toBe(true);
      expect(await running.verify(old)).toEqual({ ok: false, reason: 'rotated' });
    });

    it('a launcher in another process follows a rotation made here within its poll interval', async () => {
      const store = fresh();
      const here = await open(store);
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/stores/fixtures/keyring-follow.ts', store.service, store.account, '200'],
        { cwd: root, env: service.env, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      onTestFinished(async () => {
        child.stdin.end();
        await exited;
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString()));
      expect(await until(() => out.includes('\n'), 15_000, 20)).toBe(true);
      const before = here.keyId;
      expect(out).toBe(`ready ${before}\n`);
      await here.rotate();
      expect(await until(() => out.endsWith(`followed ${here.keyId}\n`), 15_000, 20)).toBe(true);
      expect(out).toBe(`ready ${before}\nfollowed ${here.keyId}\n`);
    });

    it('a keychain that goes away under a running authority: onStoreError told once, the token kept', async () => {
      const errors: unknown[] = [];
      const authority = await TokenAuthority.open({
        store: fresh({ pollInterval: 100 }),
        onStoreError: (error) => errors.push(error),
      });
      onTestFinished(() => authority.close());
      const token = authority.issue();
      // A bus that hangs up on every connection: each poll's attempt to reach it is counted.
      let attempts = 0;
      const gone: Server = createServer((socket) => {
        attempts += 1;
        socket.destroy();
      });
      const path = join(service.home, 'closing-bus');
      await new Promise<void>((resolve) => gone.listen(path, resolve));
      onTestFinished(() => new Promise<void>((resolve) => gone.close(() => resolve())));
      process.env.DBUS_SESSION_BUS_ADDRESS = `unix:path=${path}`;
      onTestFinished(() => {
        process.env.DBUS_SESSION_BUS_ADDRESS = service.address;
      });
      expect(await until(() => errors.length > 0, 15_000, 20)).toBe(true);
      // Several more polls fail meanwhile; only the first failure is reported.
      const attemptsAtReport = attempts;
      expect(await until(() => attempts >= attemptsAtReport + 3, 15_000, 20)).toBe(true);
      expect(errors).toHaveLength(1);
      expect(isLauncherAuthError(errors[0], 'ERR_STORE_UNAVAILABLE')).toBe(true);
      expect((await authority.verify(token)).ok).toBe(true);
    });

    it('a damaged entry is refused with ERR_STORE_CORRUPT naming the entry, and left as it was', async () => {
      const store = fresh();
      put(store, '{"version":1,');
      const error = await rejectionOf(TokenAuthority.open({ store }));
      expect(isLauncherAuthError(error, 'ERR_STORE_CORRUPT')).toBe(true);
      expect((error as Error).message).toBe(
        `The keychain entry (service "${store.service}", account "automation") is unusable: it is not valid JSON ` +
          '(truncated or damaged). It was left untouched; restore it, or delete it to generate a new secret ' +
          '(every token issued so far will stop working).',
      );
      expect(lookup(store)).toBe('{"version":1,');
    });

    const entryWith = (key: Uint8Array): string =>
      JSON.stringify({
        version: 1,
        id: 'k1',
        key: Buffer.from(key).toString('base64url'),
        createdAt: '2026-01-02T03:04:05.678Z',
      });

    it.each([
      ['a short key', randomBytes(16), 'the key is 16 bytes; at least 32 are required'],
      ['an all-same-byte key', new Uint8Array(32).fill(7), 'every byte of the key has the same value'],
    ])(
      'an entry with %s is refused, without the key in the message, and left as it was',
      async (_name, key, problem) => {
        const store = fresh();
        const text = entryWith(key);
        put(store, text);
        const error = await rejectionOf(TokenAuthority.open({ store }));
        expect(isLauncherAuthError(error, 'ERR_STORE_CORRUPT')).toBe(true);
        const message = (error as Error).message;
        expect(message).toContain(store.service);
        expect(message).toContain(problem);
        const spellings = [
          Buffer.from(key).toString('base64url'),
          Buffer.from(key).toString('hex'),
          Buffer.from(key).toString('base64'),
        ];
        expect(spellings.some((spelling) => message.includes(spelling))).toBe(false);
        expect(lookup(store) === text).toBe(true);
      },
    );

    it('save() refuses a guessable record (ERR_INVALID_RECORD) and honours an aborted signal; nothing is written', async () => {
      const store = fresh();
      const record: SecretRecord = { id: 'k1', key: new Uint8Array(32), createdAt: new Date() };
      const refused = await rejectionOf(store.save(record));
      expect(isLauncherAuthError(refused, 'ERR_INVALID_RECORD')).toBe(true);
      const controller = new AbortController();
      const reason = new Error('given up');
      controller.abort(reason);
      const good: SecretRecord = { id: 'k2', key: new Uint8Array(randomBytes(32)), createdAt: new Date() };
      expect(await rejectionOf(store.save(good, { signal: controller.signal }))).toBe(reason);
      expect(await store.load()).toBeUndefined();
    });

    describe('no usable Secret Service: a quick ERR_STORE_UNAVAILABLE pointing to FileSecretStore', () => {
      async function unavailable(store: KeyringSecretStore): Promise<string> {
        const error = await rejectionOf(TokenAuthority.open({ store }));
        expect(isLauncherAuthError(error, 'ERR_STORE_UNAVAILABLE')).toBe(true);
        const message = (error as Error).message;
        expect(message).toContain(`service "${store.service}", account "automation"`);
        expect(message).toContain('FileSecretStore');
        return message;
      }

      function onBus(address: string): void {
        process.env.DBUS_SESSION_BUS_ADDRESS = address;
        onTestFinished(() => {
          process.env.DBUS_SESSION_BUS_ADDRESS = service.address;
        });
      }

      it('no session bus', async () => {
        onBus(`unix:path=${join(service.home, 'no-such-bus')}`);
        expect(await unavailable(fresh())).toContain('Failed to connect to socket');
      });

      it(
        'a locked keyring (the unlock prompt cannot be shown)',
        async () => {
          const locked = await startSecretService();
          onTestFinished(() => locked.stop());
          const store = fresh();
          onBus(locked.address);
          await open(store);
          locked.lock();
          const other = new KeyringSecretStore({ service: store.service, account: store.account });
          expect(await unavailable(other)).toContain('unlock');
        },
        budget(60_000),
      );

      it('a bus that never answers: the call is abandoned after `timeout`, and the next call works', async () => {
        const sockets = new Set<Socket>();
        const silent: Server = createServer((socket) => void sockets.add(socket));
        const path = join(service.home, 'silent-bus');
        await new Promise<void>((resolve) => silent.listen(path, resolve));
        onTestFinished(() => {
          for (const socket of sockets) socket.destroy();
          return new Promise<void>((resolve) => silent.close(() => resolve()));
        });
        onBus(`unix:path=${path}`);
        // The same store then talks to the real Secret Service, whose answer a loaded machine slows: a budget.
        const timeout = budget(1500);
        const store = new KeyringSecretStore({
          service: `launcher-auth-test-${randomUUID()}`,
          account: 'automation',
          timeout,
        });
        expect(await unavailable(store)).toContain(`did not answer within ${timeout} ms`);
        process.env.DBUS_SESSION_BUS_ADDRESS = service.address;
        expect(await store.load()).toBeUndefined();
      });
    });

    describe('examples/keyring.ts', () => {
      /** The example serves what its comments promise: open health, empty 401, the token accepted. */
      async function served(started: Awaited<ReturnType<typeof startExample>>): Promise<void> {
        const health = await fetch(`${started.url}/health`);
        expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
        const refused = await fetch(`${started.url}/api/status`);
        expect([refused.status, await refused.text()]).toEqual([401, '']);
        const headers = { authorization: `Bearer ${started.authority.issue()}` };
        const allowed = await fetch(`${started.url}/api/status`, { headers });
        expect([allowed.status, await allowed.json()]).toEqual([
          200,
          { kept: started.kept, keyId: started.authority.keyId },
        ]);
      }

      async function dataDir(): Promise<string> {
        const folder = await mkdtemp(join(tmpdir(), 'launcher-auth-example-'));
        onTestFinished(() => rm(folder, { recursive: true, force: true }));
        return folder;
      }

      function withoutBus(): void {
        process.env.DBUS_SESSION_BUS_ADDRESS = `unix:path=${join(service.home, 'no-such-bus')}`;
        onTestFinished(() => {
          process.env.DBUS_SESSION_BUS_ADDRESS = service.address;
        });
      }

      it('keeps the secret in the keychain when there is one, and never switches to a file later', async () => {
        const folder = await dataDir();
        const name = `launcher-auth-test-${randomUUID()}`;
        const first = await startExample({ service: name, port: 0, dataDir: folder });
        onTestFinished(() => first.close());
        expect(first.kept).toBe('keychain');
        await served(first);
        await first.close();
        withoutBus();
        const error = await rejectionOf(startExample({ service: name, port: 0, dataDir: folder }));
        expect(isLauncherAuthError(error, 'ERR_STORE_UNAVAILABLE')).toBe(true);
        expect(await readFile(join(folder, 'secret-store.txt'), 'utf8')).toBe('keychain');
        await expect(readFile(join(folder, 'secret.json'))).rejects.toMatchObject({ code: 'ENOENT' });
      });

      it('keeps it in the 0600 file when there is no Secret Service at the first start, and stays there', async () => {
        const folder = await dataDir();
        const name = `launcher-auth-test-${randomUUID()}`;
        withoutBus();
        const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
        onTestFinished(() => warn.mockRestore());
        const first = await startExample({ service: name, port: 0, dataDir: folder });
        onTestFinished(() => first.close());
        expect(first.kept).toBe('file');
        expect(warn).toHaveBeenCalledTimes(1);
        expect(String(warn.mock.calls[0]?.[0])).toContain('FileSecretStore');
        await served(first);
        const token = first.authority.issue();
        await first.close();
        process.env.DBUS_SESSION_BUS_ADDRESS = service.address; // a keychain now: the file stays the choice
        const again = await startExample({ service: name, port: 0, dataDir: folder });
        onTestFinished(() => again.close());
        expect(again.kept).toBe('file');
        expect(again.authority.issue()).toBeSameToken(token);
      });
    });
  },
);
