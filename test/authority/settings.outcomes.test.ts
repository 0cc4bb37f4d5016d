// regenerateToken() and tokenView() on in-memory stores: the exact result of each outcome, in each state of the
// authority, as a settings window receives it. settings.test.ts runs the same outcomes on real file and Redis stores.
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  LauncherAuthError,
  MemorySecretStore,
  TokenAuthority,
  regenerateToken,
  tokenView,
  type RegenerateResult,
  type SecretStore,
} from 'launcher-auth';
import { generateRecord } from 'launcher-auth/store-kit';

const NOT_KNOWN = 'which token works is not known yet; check again in a moment.';

async function opened(store: SecretStore): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open({ store, onStoreError: () => undefined });
  onTestFinished(() => authority.close());
  return authority;
}

/** A memory store whose save fails (as a full disk makes it) while its load still answers. */
function failingSave(memory: MemorySecretStore): SecretStore {
  return {
    load: () => memory.load(),
    save: () => Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })),
  };
}

/** The result with its cause named by its code, and its token by whether it is the authority's current one. */
function shown(result: RegenerateResult, authority: TokenAuthority): Record<string, unknown> {
  const { token, cause, ...rest } = result;
  return { ...rest, cause: cause?.code, token: token === undefined ? undefined : token === authority.issue() };
}

describe('regenerateToken(): each outcome, exactly', () => {
  it('regenerated: the new token, and the one before is refused', async () => {
    const authority = await opened(new MemorySecretStore());
    const before = authority.issue();
    expect(shown(await regenerateToken(authority), authority)).toEqual({
      outcome: 'regenerated',
      state: 'ok',
      token: true,
      message: 'New token created: the previous token no longer works.',
      cause: undefined,
    });
    expect(await authority.verify(before)).toEqual({ ok: false, reason: 'rotated' });
  });

  it('unchanged: the token from before, still accepted, and the code and cause for the log', async () => {
    const memory = new MemorySecretStore(generateRecord());
    const authority = await opened(failingSave(memory));
    const before = authority.issue();
    const result = await regenerateToken(authority);
    expect(shown(result, authority)).toEqual({
      outcome: 'unchanged',
      state: 'ok',
      token: true,
      message: 'Could not regenerate the token: nothing changed, and the current token still works.',
      code: 'ERR_SAVE_FAILED',
      cause: 'ERR_SAVE_FAILED',
    });
    expect(result.token).toBeSameToken(before);
  });

  it('regenerated-elsewhere: the other regeneration, once the authority holds its key, gives its token', async () => {
    const memory = new MemorySecretStore(generateRecord());
    const store: SecretStore = {
      load: () => memory.load(),
      save: async () => {
        await memory.save(generateRecord());
        throw new LauncherAuthError('ERR_SAVE_CONFLICT', 'Another writer came first.');
      },
    };
    const authority = await opened(store);
    const before = authority.issue();
    const result = await regenerateToken(authority);
    expect(shown(result, authority)).toEqual({
      outcome: 'regenerated-elsewhere',
      state: 'ok',
      token: true,
      message:
        'The token was regenerated elsewhere (another window or launcher) at the same time: the token shown now is the one that works.',
      code: 'ERR_SAVE_CONFLICT',
      cause: 'ERR_SAVE_CONFLICT',
    });
    expect(authority.keyId).toBe((await memory.load())?.id);
    expect(await authority.verify(before)).toEqual({ ok: false, reason: 'rotated' });
  });

  it('unconfirmed: no token, as which one works is not known', async () => {
    const memory = new MemorySecretStore(generateRecord());
    let readable = true;
    const store: SecretStore = {
      load: () => (readable ? memory.load() : Promise.reject(new Error('EIO: i/o error, read'))),
      save: () => Promise.reject(new Error('EIO: i/o error, write')),
    };
    const authority = await opened(store);
    readable = false;
    expect(shown(await regenerateToken(authority), authority)).toEqual({
      outcome: 'unconfirmed',
      state: 'ok',
      token: undefined,
      message: `The secret store has not confirmed the regeneration yet: ${NOT_KNOWN}`,
      code: 'ERR_SAVE_UNCERTAIN',
      cause: 'ERR_SAVE_UNCERTAIN',
    });
  });

  it('stopped: a closed authority gives no token, and says the API has stopped', async () => {
    const authority = await opened(new MemorySecretStore());
    await authority.close();
    expect(shown(await regenerateToken(authority), authority)).toEqual({
      outcome: 'stopped',
      state: 'stopped',
      token: undefined,
      message: 'The automation API has stopped: no token works until the launcher starts it again.',
      code: 'ERR_CLOSED',
      cause: 'ERR_CLOSED',
    });
  });

  it('suspended: nothing changed, but no token is given, as every token is refused; the message says why', async () => {
    const memory = new MemorySecretStore(generateRecord());
    // A store that has not vouched for the key in time (a lease that ran out): every token is refused.
    const store: SecretStore = {
      ...failingSave(memory),
      watch: (_onChange, link) => {
        link.trustUntil(0);
        return () => undefined;
      },
    };
    const authority = await opened(store);
    expect(shown(await regenerateToken(authority), authority)).toEqual({
      outcome: 'unchanged',
      state: 'suspended',
      token: undefined,
      message:
        'Could not regenerate the token; the secret store cannot be reached, so every token is refused until it answers again.',
      code: 'ERR_SAVE_FAILED',
      cause: 'ERR_SAVE_FAILED',
    });
    expect(tokenView(authority).state).toBe('suspended');
  });

  it('rejects with what rotate() rejected with when it is not one of its outcomes', async () => {
    const authority = await opened(new MemorySecretStore());
    const bug = new RangeError('a bug, not an outcome');
    Object.defineProperty(authority, 'rotate', { value: () => Promise.reject(bug) });
    await expect(regenerateToken(authority)).rejects.toBe(bug);
  });

  it('refuses what is not an authority with a TypeError naming the function', async () => {
    await expect(regenerateToken({} as TokenAuthority)).rejects.toThrow(
      new TypeError('regenerateToken: `authority` must be a TokenAuthority (from TokenAuthority.open()).'),
    );
  });
});

describe('tokenView()', () => {
  it('the token, twelve dots and its last 4 characters, the key id and the state', async () => {
    const authority = await opened(new MemorySecretStore());
    const { token, masked, ...view } = tokenView(authority);
    expect(token).toBeSameToken(authority.issue());
    expect(view).toEqual({ keyId: authority.keyId, state: 'ok' });
    // Compared as booleans: a failure must not print the token.
    expect([masked.length, masked.startsWith('•'.repeat(12)), masked.slice(12) === token.slice(-4)]).toEqual([
      16,
      true,
      true,
    ]);
  });

  it('refuses what is not an authority with a TypeError naming the function', () => {
    expect(() => tokenView(null as unknown as TokenAuthority)).toThrow(
      new TypeError('tokenView: `authority` must be a TokenAuthority (from TokenAuthority.open()).'),
    );
  });
});
