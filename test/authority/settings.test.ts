// regenerateToken() and tokenView(): each outcome of rotate() against a real store, what the settings window gets
// for it, and that no message ever holds a token.
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  FileSecretStore,
  TokenAuthority,
  regenerateToken,
  tokenView,
  type RegenerateResult,
  type SecretStore,
} from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { SKIP_REASON, connectedClient, startRedis } from '../support/redis-server.js';
import { until } from '../support/async.js';
import { budget } from '../support/machine.js';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-settings-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function opened(store: SecretStore): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open({ store, onStoreError: () => undefined });
  onTestFinished(() => authority.close());
  return authority;
}

/** The outcome and message, and whether the token is the authority's current one (never the token itself). */
function summary(
  result: RegenerateResult,
  authority: TokenAuthority,
): { outcome: string; message: string; current: boolean } {
  expect(result.token === undefined || !result.message.includes(result.token)).toBe(true);
  return { outcome: result.outcome, message: result.message, current: result.token === authority.issue() };
}

describe('regenerateToken() on a FileSecretStore', () => {
  it('regenerated: the returned token works, the one before is refused, the file holds the new key', async () => {
    const path = join(await tempDir(), 'secret.json');
    const authority = await opened(new FileSecretStore(path));
    const before = authority.issue();

    const result = await regenerateToken(authority);
    expect(summary(result, authority)).toEqual({
      outcome: 'regenerated',
      message: 'New token created: the previous token no longer works.',
      current: true,
    });
    expect([result.state, result.code, result.cause]).toEqual(['ok', undefined, undefined]);
    expect(await authority.verify(result.token ?? '')).toMatchObject({ ok: true });
    expect(await authority.verify(before)).toEqual({ ok: false, reason: 'rotated' });
    expect((await new FileSecretStore(path).load())?.id).toBe(authority.keyId);
  });

  it('unchanged: a save that fails with the file still readable leaves the token from before, still valid', async () => {
    const path = join(await tempDir(), 'secret.json');
    const file = new FileSecretStore(path);
    // The file store, with a save that fails before writing (as a full disk makes it).
    const store: SecretStore = {
      load: () => file.load(),
      save: () =>
        Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })),
    };
    await (await TokenAuthority.open({ store: file })).close(); // the first run: the file is created
    const authority = await opened(store);
    const before = authority.issue();

    const result = await regenerateToken(authority);
    expect(summary(result, authority)).toEqual({
      outcome: 'unchanged',
      message: 'Could not regenerate the token: nothing changed, and the current token still works.',
      current: true,
    });
    expect(result.token).toBeSameToken(before);
    expect(await authority.verify(before)).toMatchObject({ ok: true });
    // The reason, for the log: the code, and the store's own failure under it.
    expect(result.code).toBe('ERR_SAVE_FAILED');
    expect(result.cause?.code).toBe('ERR_SAVE_FAILED');
    expect((result.cause?.cause as { code?: string } | undefined)?.code).toBe('ENOSPC');
  });

  it('unconfirmed: a save that fails where nothing can be read gives no token, as which one works is not known', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const authority = await opened(new FileSecretStore(path));
    const before = authority.issue();
    // Something else takes the file's place: the save fails at its rename, and no read can check it.
    await rm(path);
    await mkdir(path);

    const result = await regenerateToken(authority);
    expect(summary(result, authority)).toEqual({
      outcome: 'unconfirmed',
      message:
        'The secret store has not confirmed the regeneration yet: which token works is not known yet; check again in a moment.',
      current: false,
    });
    expect([result.state, result.token, result.code]).toEqual(['ok', undefined, 'ERR_SAVE_UNCERTAIN']);
    expect(await authority.verify(before)).toMatchObject({ ok: true });
    expect(await readdir(path)).toEqual([]);
  });

  it('stopped: a closed authority gives no token', async () => {
    const authority = await opened(new FileSecretStore(join(await tempDir(), 'secret.json')));
    await authority.close();
    const result = await regenerateToken(authority);
    expect({ ...result, cause: result.cause?.code }).toEqual({
      outcome: 'stopped',
      state: 'stopped',
      token: undefined,
      message: 'The automation API has stopped: no token works until the launcher starts it again.',
      code: 'ERR_CLOSED',
      cause: 'ERR_CLOSED',
    });
    expect(tokenView(authority).state).toBe('stopped');
  });

  it('refuses what is not an authority with a TypeError naming `authority`', async () => {
    await expect(regenerateToken({} as TokenAuthority)).rejects.toThrow(
      new TypeError('regenerateToken: `authority` must be a TokenAuthority (from TokenAuthority.open()).'),
    );
    expect(() => tokenView(null as unknown as TokenAuthority)).toThrow(
      new TypeError('tokenView: `authority` must be a TokenAuthority (from TokenAuthority.open()).'),
    );
  });
});

describe('tokenView()', () => {
  it('the token, twelve dots and its last 4 characters, and the key id; it follows a regeneration', async () => {
    const path = join(await tempDir(), 'secret.json');
    const authority = await opened(new FileSecretStore(path));
    const view = tokenView(authority);
    expect(view.token).toBeSameToken(authority.issue());
    expect(view.keyId).toBe(authority.keyId);
    expect(view.masked).toBe(`${'•'.repeat(12)}${authority.issue().slice(-4)}`);
    expect(view.state).toBe('ok');

    const { token } = await regenerateToken(authority);
    const after = tokenView(authority);
    expect(after.token).toBeSameToken(token!);
    expect(after.keyId).not.toBe(view.keyId);
  });
});

describe.skipIf(SKIP_REASON !== undefined)('regenerateToken() on RedisSecretStore, two instances', () => {
  it('regenerated-elsewhere: of two regenerations at once, the one that lost shows the token that won, which both accept', async () => {
    const redis = await startRedis();
    onTestFinished(() => redis.kill());
    const timing = { leaseMs: 1000, renewInterval: 200, driftMargin: 100 };
    const open = async (): Promise<TokenAuthority> => {
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      return opened(new RedisSecretStore({ client, key: 'settings', ...timing }));
    };
    const a = await open();
    const b = await open();
    const before = a.issue();

    const results = await Promise.all([regenerateToken(a), regenerateToken(b)]);
    expect(results.map((result) => result.outcome)).toContain('regenerated-elsewhere');
    for (const result of results) {
      expect(result.outcome === 'regenerated' || result.outcome === 'regenerated-elsewhere').toBe(true);
      expect(result.message).toMatch(/^(?:New token created|The token was regenerated elsewhere)/);
    }
    // Every instance ends on one token, the one each result gave, and refuses the token from before.
    expect(await until(() => a.keyId === b.keyId, 5_000)).toBe(true);
    for (const result of results) expect(result.token).toBeSameToken(a.issue());
    expect(await b.verify(a.issue())).toMatchObject({ ok: true });
    expect((await a.verify(before)).ok).toBe(false);
    expect((await b.verify(before)).ok).toBe(false);
  }, 20_000);
});

describe.skipIf(SKIP_REASON !== undefined)('the settings window while Redis is frozen (SIGSTOP)', () => {
  it(
    'tokenView() says suspended while every token is refused, regenerateToken() gives no token and says why; ok again after',
    async () => {
      const redis = await startRedis();
      onTestFinished(() => redis.kill());
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      const timing = { leaseMs: budget(1000), renewInterval: budget(200), driftMargin: budget(100) };
      const store = new RedisSecretStore({ client, key: 'frozen', commandTimeout: budget(900), ...timing });
      const authority = await TokenAuthority.open({ store, saveTimeout: budget(1000), onStoreError: () => undefined });
      onTestFinished(() => authority.close());
      const before = tokenView(authority);
      expect(before.state).toBe('ok');

      redis.process.kill('SIGSTOP');
      try {
        expect(await until(() => tokenView(authority).state === 'suspended', 10_000)).toBe(true);
        expect(await authority.verify(before.token)).toEqual({ ok: false, reason: 'suspended' });
        const result = await regenerateToken(authority);
        expect([result.state, result.token]).toEqual(['suspended', undefined]);
        expect(result.message).toMatch(
          /; the secret store cannot be reached, so every token is refused until it answers again\.$/,
        );
        expect(await authority.verify(authority.issue())).toEqual({ ok: false, reason: 'suspended' });
      } finally {
        redis.process.kill('SIGCONT');
      }
      expect(await until(() => tokenView(authority).state === 'ok', 10_000)).toBe(true);
      expect(await authority.verify(tokenView(authority).token)).toMatchObject({ ok: true });
    },
    budget(40_000),
  );
});
