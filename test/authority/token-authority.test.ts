// TokenAuthority at the core level: the required answers (missing, invalid, old, current), open() and its
// options, rotation (serialized, last wins, onRotate, auth.signal), close(), the issuer, and external changes.
import { createHash, createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  LauncherAuthError,
  MemorySecretStore,
  TokenAuthority,
  isLauncherAuthError,
  type RotateEvent,
  type SecretRecord,
  type SecretStore,
  type TokenAuthorityOptions,
  type VerifyResult,
} from 'launcher-auth';
import { nextTurn, rejectionOf, until } from '../support/async.js';

const keyOf = (label: string): Uint8Array =>
  new Uint8Array(createHash('sha256').update(`launcher-auth core ${label}`).digest());
const recordOf = (id: string): SecretRecord => ({
  id,
  key: keyOf(id),
  createdAt: new Date('2024-05-01T12:00:00.000Z'),
});

const INVALID = { ok: false, reason: 'invalid' } as const;
/** A token of one of the last two keys that rotate() replaced: refused, and named as such for the host's log. */
const ROTATED = { ok: false, reason: 'rotated' } as const;
const MALFORMED = { ok: false, reason: 'malformed' } as const;
const MISSING = { ok: false, reason: 'missing' } as const;

async function opened(options: TokenAuthorityOptions): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open(options);
  onTestFinished(() => authority.close());
  return authority;
}

/** A JWT other than the launcher's token, signed by a holder of `key`: it goes through jose, not the fast path. */
function otherJwt(key: Uint8Array, claims: Record<string, unknown> = { sub: 'automation' }): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
}

function accepted(result: VerifyResult): Extract<VerifyResult, { ok: true }> {
  expect(result.ok).toBe(true);
  return result as Extract<VerifyResult, { ok: true }>;
}

/** A store that another process can change: `replace()` swaps the record and calls the watchers. */
class WatchedStore implements SecretStore {
  #record: SecretRecord | undefined;
  readonly watchers = new Set<() => void>();
  loads = 0;
  /** What the next loads do instead of returning the record. */
  loadFault: { reject: unknown } | { resolve: unknown } | undefined;

  constructor(record?: SecretRecord) {
    this.#record = record;
  }
  async load(): Promise<SecretRecord | undefined> {
    this.loads++;
    if (this.loadFault !== undefined) {
      if ('reject' in this.loadFault) throw this.loadFault.reject;
      return this.loadFault.resolve as SecretRecord;
    }
    return this.#record === undefined ? undefined : { ...this.#record, key: new Uint8Array(this.#record.key) };
  }
  async save(record: SecretRecord): Promise<void> {
    this.#record = { ...record, key: new Uint8Array(record.key) };
  }
  watch(onChange: () => void): () => void {
    this.watchers.add(onChange);
    return () => void this.watchers.delete(onChange);
  }
  /** Another process replaced the secret (or touched the file): tell the watchers. */
  replace(record: SecretRecord | undefined = this.#record): void {
    this.#record = record;
    for (const watcher of [...this.watchers]) watcher();
  }
}

describe('the required answers at the core level', () => {
  it('no Authorization value: missing', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('table')) });
    expect(await authority.authenticate(undefined)).toEqual(MISSING);
    expect(await authority.authenticate([])).toEqual(MISSING);
    expect(await authority.verify('')).toEqual(MISSING);
  });

  it('an invalid token: malformed when it is no JWT, invalid when another key signed it', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('table')) });
    expect(await authority.verify('not-a-token')).toEqual(MALFORMED);
    expect(await authority.authenticate('Bearer not-a-token')).toEqual(MALFORMED);
    const forged = await otherJwt(keyOf('someone else'));
    expect(await authority.verify(forged)).toEqual(INVALID);
    expect(await authority.authenticate(`Bearer ${forged}`)).toEqual(INVALID);
    // The launcher's own token shape, signed with another key.
    const wrongKey = (
      await opened({ store: new MemorySecretStore({ ...recordOf('table'), key: keyOf('x') }) })
    ).issue();
    expect(await authority.verify(wrongKey)).toEqual(INVALID);
  });

  it('a token from before the latest rotate() is invalid; the token rotate() returned is accepted at once', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('table')) });
    const first = authority.issue();
    const firstOther = await otherJwt(keyOf('table'));
    const second = await authority.rotate();
    const third = await authority.rotate();
    for (const [old, refusal] of [
      [first, ROTATED],
      [firstOther, INVALID],
      [second, ROTATED],
    ] as const) {
      expect(await authority.verify(old)).toEqual(refusal);
      expect(await authority.authenticate(`Bearer ${old}`)).toEqual(refusal);
    }
    expect(authority.issue()).toBeSameToken(third);
    expect(await authority.verify(third)).toMatchObject({ ok: true, keyId: authority.keyId });
    expect(await authority.authenticate(`Bearer ${third}`)).toMatchObject({ ok: true, keyId: authority.keyId });
  });

  it('the current token: accepted with its claims, the key id and a live signal', async () => {
    const record = recordOf('table');
    const authority = await opened({ store: new MemorySecretStore(record) });
    for (const result of [
      await authority.verify(authority.issue()),
      await authority.authenticate(`Bearer ${authority.issue()}`),
    ]) {
      const ok = accepted(result);
      expect(ok.keyId).toBe('table');
      expect(ok.claims).toEqual({ jti: 'table', iat: record.createdAt.getTime() / 1000 });
      expect(Object.isFrozen(ok.claims)).toBe(true);
      expect(ok.signal).toBeInstanceOf(AbortSignal);
      expect(ok.signal.aborted).toBe(false);
    }
  });
});

describe('issue()', () => {
  it('returns the same string on every call until rotate(), then the token rotate() resolved with', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('issue')) });
    const first = authority.issue();
    expect(authority.issue()).toBeSameToken(first);
    expect(authority.issue()).toBeSameToken(first);
    const next = await authority.rotate();
    expect(next).not.toBeSameToken(first);
    expect(authority.issue()).toBeSameToken(next);
    expect(authority.issue()).toBeSameToken(next);
  });
});

describe('open()', () => {
  it('on an empty store: generates a 32-byte key and a random id, saves it, and issues its token', async () => {
    const store = new MemorySecretStore();
    const before = Date.now();
    const authority = await opened({ store });
    const after = Date.now();
    const saved = await store.load();
    expect(saved).toBeDefined();
    const record = saved as SecretRecord;
    expect(record.key).toBeInstanceOf(Uint8Array);
    expect(record.key.byteLength).toBe(32);
    expect(record.id).toBe(authority.keyId);
    expect(record.id.length).toBeGreaterThan(0);
    expect(record.createdAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(record.createdAt.getTime()).toBeLessThanOrEqual(after);
    // The token is the saved record's: a second authority on the same store issues the same bytes.
    const again = await opened({ store });
    expect(again.issue()).toBeSameToken(authority.issue());

    // Another empty store gets another id and another key.
    const otherStore = new MemorySecretStore();
    await opened({ store: otherStore });
    const other = (await otherStore.load()) as SecretRecord;
    expect(other.id === record.id).toBe(false);
    expect(Buffer.from(other.key).equals(Buffer.from(record.key))).toBe(false);
  });

  it('loads and does not save when the store has a record', async () => {
    const store = new WatchedStore(recordOf('kept'));
    let saves = 0;
    const save = store.save.bind(store);
    store.save = (record) => {
      saves++;
      return save(record);
    };
    const authority = await opened({ store });
    expect(authority.keyId).toBe('kept');
    expect(saves).toBe(0);
  });

  it.each([
    ['a 31-byte key', { ...recordOf('short'), key: keyOf('short').subarray(0, 31) }],
    ['an empty id', { ...recordOf('x'), id: '' }],
    ['a key that is no Uint8Array', { ...recordOf('x'), key: 'k'.repeat(32) }],
    ['an invalid date', { ...recordOf('x'), createdAt: new Date(Number.NaN) }],
    ['null', null],
  ])('rejects ERR_INVALID_RECORD for a store that returns %s, without naming the key', async (_, returned) => {
    let saves = 0;
    const store: SecretStore = {
      load: async () => returned as SecretRecord,
      save: async () => void saves++,
    };
    const error = await rejectionOf(TokenAuthority.open({ store }));
    expect(error).toBeInstanceOf(LauncherAuthError);
    expect(isLauncherAuthError(error, 'ERR_INVALID_RECORD')).toBe(true);
    const message = (error as Error).message;
    const key = (returned as { key?: unknown } | null)?.key;
    if (key instanceof Uint8Array) {
      expect(message.includes(Buffer.from(key).toString('base64url').slice(0, 12))).toBe(false);
      expect(message.includes(Buffer.from(key).toString('hex').slice(0, 12))).toBe(false);
    }
    expect(saves).toBe(0);
  });

  it('names the 31-byte key problem in words', async () => {
    const store: SecretStore = {
      load: async () => ({ ...recordOf('short'), key: new Uint8Array(31) }),
      save: async () => undefined,
    };
    const error = await rejectionOf(TokenAuthority.open({ store }));
    expect((error as Error).message).toMatch(/31 bytes; at least 32/);
  });

  const memory = (): MemorySecretStore => new MemorySecretStore(recordOf('options'));
  it.each<[string, unknown, RegExp]>([
    ['no options', undefined, /options/],
    ['null options', null, /options/],
    ['no store', {}, /`store`/],
    ['a null store', { store: null }, /`store`/],
    ['a store without save()', { store: { load: async () => undefined } }, /`store`/],
    ['a store without load()', { store: { save: async () => undefined } }, /`store`/],
    [
      'a store whose watch is no function',
      { store: { load: async () => undefined, save: async () => undefined, watch: 1 } },
      /`store\.watch`/,
    ],
    ['an empty issuer', { store: memory(), issuer: '' }, /`issuer`/],
    ['a numeric issuer', { store: memory(), issuer: 42 }, /`issuer`/],
    ['an onStoreError that is no function', { store: memory(), onStoreError: 'log' }, /`onStoreError`/],
    ['a negative saveTimeout', { store: memory(), saveTimeout: -1 }, /`saveTimeout`/],
    ['a fractional saveTimeout', { store: memory(), saveTimeout: 1.5 }, /`saveTimeout`/],
  ])('%s: rejects with a TypeError naming the option', async (_, options, named) => {
    const error = await rejectionOf(TokenAuthority.open(options as never));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toMatch(named);
  });

  it('onRotate() throws a TypeError naming the listener when it is no function', async () => {
    const authority = await opened({ store: memory() });
    expect(() => authority.onRotate('listener' as never)).toThrow(TypeError);
    expect(() => authority.onRotate(undefined as never)).toThrow(/`listener`/);
  });
});

describe('rotate()', () => {
  it('concurrent calls run one after another and the last one wins', async () => {
    // Saves that take a little while and count how many overlap.
    class SlowStore extends MemorySecretStore {
      active = 0;
      maxActive = 0;
      override async save(record: SecretRecord): Promise<void> {
        this.active++;
        this.maxActive = Math.max(this.maxActive, this.active);
        // A turn of the event loop: another save, were one let in, would start now.
        await nextTurn();
        await super.save(record);
        this.active--;
      }
    }
    const store = new SlowStore(recordOf('serial'));
    const authority = await opened({ store });
    const events: RotateEvent[] = [];
    authority.onRotate((event) => void events.push(event));
    const settledOrder: number[] = [];
    const rotations = Array.from({ length: 6 }, (_, i) =>
      authority.rotate().then((token) => (settledOrder.push(i), token)),
    );
    const tokens = await Promise.all(rotations);

    expect(store.maxActive).toBe(1);
    expect(settledOrder).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(tokens).size).toBe(6);
    const last = tokens[5] as string;
    expect(authority.issue()).toBeSameToken(last);
    expect(await authority.verify(last)).toMatchObject({ ok: true, keyId: authority.keyId });
    for (const [i, earlier] of tokens.slice(0, 5).entries()) {
      expect(await authority.verify(earlier)).toEqual(i >= 3 ? ROTATED : INVALID);
    }
    // One event per rotation, each replacing the key the previous one installed.
    expect(events).toHaveLength(6);
    let previous = 'serial';
    for (const event of events) {
      expect(event.previousKeyId).toBe(previous);
      previous = event.keyId;
    }
    expect(previous).toBe(authority.keyId);
    expect((await store.load())?.id).toBe(authority.keyId);
  });

  it.each([
    ['rejects', 'reject'],
    ['throws synchronously', 'throw'],
  ] as const)(
    'a save() that %s: ERR_SAVE_FAILED with the cause; nothing changes in memory or in the store',
    async (_, how) => {
      const cause = new Error('EIO: i/o error, write');
      // A MemorySecretStore whose save() fails on demand, so "unchanged" is checked against a real store.
      class FailingStore extends MemorySecretStore {
        failure: 'reject' | 'throw' | undefined;
        attempts = 0;
        override save(record: SecretRecord): Promise<void> {
          this.attempts++;
          if (this.failure === 'throw') throw cause;
          if (this.failure === 'reject') return Promise.reject(cause);
          return super.save(record);
        }
      }
      const store = new FailingStore(recordOf('kept'));
      const authority = await opened({ store });
      const token = authority.issue();
      const other = await otherJwt(keyOf('kept'));
      const { signal } = accepted(await authority.verify(token));
      let rotations = 0;
      authority.onRotate(() => void rotations++);

      store.failure = how;
      const error = await rejectionOf(authority.rotate());
      expect(store.attempts).toBe(1);
      expect(error).toBeInstanceOf(LauncherAuthError);
      expect(isLauncherAuthError(error, 'ERR_SAVE_FAILED')).toBe(true);
      expect((error as Error).cause).toBe(cause);

      expect(authority.issue()).toBeSameToken(token);
      expect(authority.keyId).toBe('kept');
      expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'kept' });
      expect(await authority.authenticate(`Bearer ${token}`)).toMatchObject({ ok: true, keyId: 'kept' });
      expect(await authority.verify(other)).toMatchObject({ ok: true, keyId: 'kept' });
      expect(signal.aborted).toBe(false);
      expect(rotations).toBe(0);
      const stored = (await store.load()) as SecretRecord;
      expect(stored.id).toBe('kept');
      expect(Buffer.from(stored.key).equals(Buffer.from(keyOf('kept')))).toBe(true);
      expect(stored.createdAt.getTime()).toBe(recordOf('kept').createdAt.getTime());

      // The failure does not jam the queue: the next rotation, once the store works again, goes through.
      store.failure = undefined;
      const next = await authority.rotate();
      expect(await authority.verify(next)).toMatchObject({ ok: true, keyId: authority.keyId });
      expect(await authority.verify(token)).toEqual(ROTATED);
      expect((await store.load())?.id).toBe(authority.keyId);
      expect(rotations).toBe(1);
      expect(signal.aborted).toBe(true);
    },
  );

  it('a failed rotate() queued among good ones fails alone; the last good one wins', async () => {
    class FlakyStore extends MemorySecretStore {
      calls = 0;
      override async save(record: SecretRecord): Promise<void> {
        // The second save of the run fails.
        if (++this.calls === 2) throw new Error('disk full');
        await super.save(record);
      }
    }
    const store = new FlakyStore(recordOf('flaky'));
    const authority = await opened({ store });
    const outcomes = await Promise.allSettled([authority.rotate(), authority.rotate(), authority.rotate()]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(isLauncherAuthError((outcomes[1] as PromiseRejectedResult).reason, 'ERR_SAVE_FAILED')).toBe(true);
    const [first, , last] = outcomes as [PromiseFulfilledResult<string>, unknown, PromiseFulfilledResult<string>];
    expect(authority.issue()).toBeSameToken(last.value);
    expect(await authority.verify(last.value)).toMatchObject({ ok: true, keyId: authority.keyId });
    expect(await authority.verify(first.value)).toEqual(ROTATED);
    expect((await store.load())?.id).toBe(authority.keyId);
  });

  it('onRotate gets { keyId, previousKeyId } after the swap and after the old signal aborted', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('before')) });
    const { signal } = accepted(await authority.verify(authority.issue()));
    const seen: Array<{ event: RotateEvent; keyId: string; aborted: boolean }> = [];
    // Kept apart from `seen`, which a failing assertion prints.
    const tokens: string[] = [];
    authority.onRotate((event) => {
      seen.push({ event, keyId: authority.keyId, aborted: signal.aborted });
      tokens.push(authority.issue());
    });
    const next = await authority.rotate();
    expect(seen).toHaveLength(1);
    const [only] = seen as [(typeof seen)[number]];
    expect(only.event).toEqual({ keyId: authority.keyId, previousKeyId: 'before' });
    expect(Object.keys(only.event).sort()).toEqual(['keyId', 'previousKeyId']);
    expect(only.keyId).toBe(only.event.keyId);
    expect(only.aborted).toBe(true);
    expect(tokens.length === 1 && tokens[0] === next).toBe(true);
  });

  it('the function onRotate returns unsubscribes that listener only', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('unsubscribe')) });
    const calls: string[] = [];
    const stopA = authority.onRotate(() => void calls.push('a'));
    authority.onRotate(() => void calls.push('b'));
    await authority.rotate();
    stopA();
    stopA(); // a second call is harmless
    await authority.rotate();
    expect(calls).toEqual(['a', 'b', 'b']);
  });

  it('a listener that throws does not stop the rotation or the other listeners; its error surfaces uncaught', async () => {
    // The error is rethrown in a microtask, as an EventEmitter would: capture it here instead of vitest's handler.
    const caught: unknown[] = [];
    const previousHandlers = process.listeners('uncaughtException');
    const capture = (error: unknown): void => void caught.push(error);
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', capture);
    onTestFinished(() => {
      process.off('uncaughtException', capture);
      for (const handler of previousHandlers) process.on('uncaughtException', handler);
    });

    const authority = await opened({ store: new MemorySecretStore(recordOf('throwing')) });
    const old = authority.issue();
    const bug = new Error('a listener bug');
    const calls: string[] = [];
    authority.onRotate(() => {
      calls.push('first');
      throw bug;
    });
    authority.onRotate(() => void calls.push('second'));
    const next = await authority.rotate();
    await new Promise((resolve) => setImmediate(resolve));

    expect(calls).toEqual(['first', 'second']);
    expect(caught).toHaveLength(1);
    expect(caught[0]).toBe(bug);
    expect(authority.issue()).toBeSameToken(next);
    expect(await authority.verify(next)).toMatchObject({ ok: true, keyId: authority.keyId });
    expect(await authority.verify(old)).toEqual(ROTATED);
  });

  it('auth.signal aborts on rotation with ERR_KEY_ROTATED; the new key has a fresh signal', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('signal')) });
    const current = accepted(await authority.verify(authority.issue()));
    // A JWT verified by jose shares the signal of the key that verified it.
    const viaJose = accepted(await authority.authenticate(`Bearer ${await otherJwt(keyOf('signal'))}`));
    expect(viaJose.signal).toBe(current.signal);
    let aborts = 0;
    let keyIdAtAbort = '';
    current.signal.addEventListener('abort', () => {
      aborts++;
      keyIdAtAbort = authority.keyId;
    });

    const next = await authority.rotate();
    expect(current.signal.aborted).toBe(true);
    expect(aborts).toBe(1);
    expect(keyIdAtAbort).toBe(authority.keyId); // swapped before aborting
    expect(current.signal.reason).toBeInstanceOf(LauncherAuthError);
    expect(isLauncherAuthError(current.signal.reason, 'ERR_KEY_ROTATED')).toBe(true);
    expect((current.signal.reason as Error).message).toBe('The key that authenticated this request was rotated away.');

    const fresh = accepted(await authority.verify(next));
    expect(fresh.signal === current.signal).toBe(false);
    expect(fresh.signal.aborted).toBe(false);
    await authority.rotate();
    expect(fresh.signal.aborted).toBe(true);
    expect(aborts).toBe(1);
  });
});

describe('close()', () => {
  it('refuses every verification, rejects rotate() with ERR_CLOSED and aborts the signal with ERR_CLOSED', async () => {
    const store = new WatchedStore(recordOf('closing'));
    const authority = await TokenAuthority.open({ store });
    const token = authority.issue();
    const other = await otherJwt(keyOf('closing'));
    const { signal } = accepted(await authority.verify(token));
    let rotations = 0;
    authority.onRotate(() => void rotations++);
    expect(store.watchers.size).toBe(1);

    await authority.close();
    expect(await authority.verify(token)).toEqual(INVALID);
    expect(await authority.authenticate(`Bearer ${token}`)).toEqual(INVALID);
    expect(await authority.verify(other)).toEqual(INVALID);
    expect(signal.aborted).toBe(true);
    expect(isLauncherAuthError(signal.reason, 'ERR_CLOSED')).toBe(true);
    expect((signal.reason as Error).message).toBe('The token authority was closed.');
    const error = await rejectionOf(authority.rotate());
    expect(error).toBeInstanceOf(LauncherAuthError);
    expect(isLauncherAuthError(error, 'ERR_CLOSED')).toBe(true);
    // It stopped watching the store.
    expect(store.watchers.size).toBe(0);
    await authority.close();
    expect(rotations).toBe(0);
  });

  it('a verification that jose is still checking when close() comes is refused', async () => {
    const authority = await TokenAuthority.open({ store: new MemorySecretStore(recordOf('in-flight')) });
    const other = await otherJwt(keyOf('in-flight'));
    const pending = authority.verify(other);
    await authority.close();
    expect(await pending).toEqual(INVALID);
  });
});

describe('audience (RFC 7519 §4.1.3)', () => {
  const AUDIENCE = 'launcher-automation';

  it('without an audience, a correctly signed token that carries any aud is refused; one without aud passes', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('no-audience')) });
    const key = keyOf('no-audience');
    expect(accepted(await authority.verify(authority.issue())).claims.aud).toBeUndefined();
    for (const aud of ['anyone', AUDIENCE, ['a', 'b'], [], '']) {
      expect(await authority.verify(await otherJwt(key, { aud, sub: 'x' }))).toEqual(INVALID);
      expect(await authority.authenticate(`Bearer ${await otherJwt(key, { aud, sub: 'x' })}`)).toEqual(INVALID);
    }
    expect(await authority.verify(await otherJwt(key, { sub: 'x' }))).toMatchObject({ ok: true });
  });

  it('with an audience, the token carries it and only a token whose aud is or contains it is accepted', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('audience')), audience: AUDIENCE });
    const key = keyOf('audience');
    expect(accepted(await authority.verify(authority.issue())).claims.aud).toBe(AUDIENCE);
    expect(await authority.verify(await otherJwt(key, { aud: AUDIENCE }))).toMatchObject({ ok: true });
    expect(await authority.verify(await otherJwt(key, { aud: ['other', AUDIENCE] }))).toMatchObject({ ok: true });
    for (const aud of ['other', `${AUDIENCE} `, ['other'], []]) {
      expect(await authority.verify(await otherJwt(key, { aud }))).toEqual(INVALID);
    }
    expect(await authority.verify(await otherJwt(key, { sub: 'no aud' }))).toEqual(INVALID);
  });

  it.each([
    ['an empty audience', ''],
    ['a numeric audience', 7],
    ['a list', ['a']],
  ])('refuses %s with a TypeError naming the option', async (_, audience) => {
    await expect(
      TokenAuthority.open({ store: new MemorySecretStore(), audience } as unknown as Parameters<
        typeof TokenAuthority.open
      >[0]),
    ).rejects.toThrow(/`audience`/);
  });
});

describe('issuer', () => {
  const ISSUER = 'launcher.example';

  it('the token carries iss; a correctly signed token with another iss, or none, is refused', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('issuer')), issuer: ISSUER });
    const current = accepted(await authority.verify(authority.issue()));
    expect(current.claims.iss).toBe(ISSUER);
    const key = keyOf('issuer');
    expect(await authority.verify(await otherJwt(key, { iss: ISSUER, sub: 'x' }))).toMatchObject({
      ok: true,
      keyId: 'issuer',
    });
    expect(await authority.verify(await otherJwt(key, { iss: 'another.example' }))).toEqual(INVALID);
    expect(await authority.verify(await otherJwt(key, { iss: `${ISSUER} ` }))).toEqual(INVALID);
    expect(await authority.verify(await otherJwt(key, { sub: 'no iss' }))).toEqual(INVALID);
    // The same record without an issuer yields another token, which the issuer-bound authority refuses.
    const plain = await opened({ store: new MemorySecretStore(recordOf('issuer')) });
    expect(plain.issue()).not.toBeSameToken(authority.issue());
    expect(await authority.verify(plain.issue())).toEqual(INVALID);
  });

  it('without an issuer, iss is not checked', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('no-issuer')) });
    expect(accepted(await authority.verify(authority.issue())).claims.iss).toBeUndefined();
    expect(await authority.verify(await otherJwt(keyOf('no-issuer'), { iss: 'anyone' }))).toMatchObject({ ok: true });
  });
});

describe('an external change reported by the store', () => {
  it('is adopted: the old token refused, the new one accepted, onRotate told, keyId updated', async () => {
    const store = new WatchedStore(recordOf('mine'));
    const authority = await opened({ store });
    const old = authority.issue();
    const { signal } = accepted(await authority.verify(old));
    const events: RotateEvent[] = [];
    authority.onRotate((event) => void events.push(event));

    store.replace(recordOf('theirs'));
    expect(await until(() => authority.keyId === 'theirs')).toBe(true);
    expect(await authority.verify(old)).toEqual(ROTATED);
    expect(await authority.verify(authority.issue())).toMatchObject({ ok: true, keyId: 'theirs' });
    // The token is the one the other process shows for that record.
    const elsewhere = await opened({ store: new MemorySecretStore(recordOf('theirs')) });
    expect(authority.issue()).toBeSameToken(elsewhere.issue());
    expect(await authority.verify(await otherJwt(keyOf('theirs')))).toMatchObject({ ok: true, keyId: 'theirs' });
    expect(events).toEqual([{ keyId: 'theirs', previousKeyId: 'mine' }]);
    expect(isLauncherAuthError(signal.reason, 'ERR_KEY_ROTATED')).toBe(true);
  });

  it('an earlier secret brought back is current, not kept among the rotated-away tokens it would crowd out', async () => {
    const store = new WatchedStore(recordOf('first'));
    const authority = await opened({ store });
    const first = authority.issue();
    for (const id of ['second', 'third']) {
      store.replace(recordOf(id));
      expect(await until(() => authority.keyId === id)).toBe(true);
    }
    const third = authority.issue();
    // A restored backup holds 'second' again: its token works, and both others are named as rotated away.
    store.replace(recordOf('second'));
    expect(await until(() => authority.keyId === 'second')).toBe(true);
    expect(await authority.verify(authority.issue())).toMatchObject({ ok: true, keyId: 'second' });
    expect([await authority.verify(third), await authority.verify(first)]).toEqual([ROTATED, ROTATED]);
  });

  it('a notification that finds the same record changes nothing', async () => {
    const store = new WatchedStore(recordOf('same'));
    const authority = await opened({ store });
    const token = authority.issue();
    const { signal } = accepted(await authority.verify(token));
    let rotations = 0;
    authority.onRotate(() => void rotations++);
    const loads = store.loads;
    store.replace();
    expect(await until(() => store.loads > loads)).toBe(true);
    // The store is in memory: what the authority does with the record has run by the loop's next turn.
    await nextTurn();
    expect(rotations).toBe(0);
    expect(signal.aborted).toBe(false);
    expect(authority.issue()).toBeSameToken(token);
  });

  it.each([
    [
      'load() rejects',
      { reject: new Error('EIO: i/o error, read') },
      (error: Error) => error.message === 'EIO: i/o error, read',
    ],
    ['load() rejects with a non-Error', { reject: 'gone' }, (error: Error) => error.message === 'gone'],
    ['the record is gone', { resolve: undefined }, (error: Error) => isLauncherAuthError(error, 'ERR_STORE_IO')],
    [
      'the key is 31 bytes',
      { resolve: { ...recordOf('short'), key: new Uint8Array(31) } },
      (error: Error) => isLauncherAuthError(error, 'ERR_INVALID_RECORD'),
    ],
  ] as const)('a failed reload (%s): onStoreError told, the current token stays valid', async (_, fault, expected) => {
    const store = new WatchedStore(recordOf('steady'));
    const errors: Error[] = [];
    const authority = await opened({ store, onStoreError: (error) => void errors.push(error) });
    const token = authority.issue();
    let rotations = 0;
    authority.onRotate(() => void rotations++);

    store.loadFault = fault;
    store.replace();
    expect(await until(() => errors.length > 0)).toBe(true);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(Error);
    expect(expected(errors[0] as Error)).toBe(true);
    if ('reject' in fault && fault.reject instanceof Error) expect(errors[0]).toBe(fault.reject);
    expect(authority.keyId).toBe('steady');
    expect(authority.issue()).toBeSameToken(token);
    expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'steady' });
    expect(rotations).toBe(0);
  });

  it('an onStoreError that throws does not jam later rotations and reloads', async () => {
    const store = new WatchedStore(recordOf('first'));
    const authority = await opened({
      store,
      onStoreError: () => {
        throw new Error('the host handler broke');
      },
    });
    store.loadFault = { reject: new Error('EIO') };
    const loads = store.loads;
    store.replace();
    expect(await until(() => store.loads > loads)).toBe(true);
    store.loadFault = undefined;
    const next = await authority.rotate();
    expect(await authority.verify(next)).toMatchObject({ ok: true, keyId: authority.keyId });
    store.replace(recordOf('second'));
    expect(await until(() => authority.keyId === 'second')).toBe(true);
  });
});

describe('never throws, whatever the input type', () => {
  const inputs: Array<[string, unknown]> = [
    ['a number', 42],
    ['zero', 0],
    ['NaN', Number.NaN],
    ['true', true],
    ['an object', {}],
    ['an object with toString', { toString: () => 'Bearer x' }],
    ['null', null],
    ['an array of non-strings', [1, 2]],
    ['a one-element array of a number', [1]],
    ['a one-element array of null', [null]],
    ['a symbol', Symbol('token')],
    ['a bigint', 10n],
    ['a function', () => 'Bearer x'],
    ['a String object', new String('Bearer x')],
  ];

  it.each(inputs)('verify(%s) resolves with { ok: false }', async (_, input) => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('inputs')) });
    const pending = authority.verify(input as never);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual(MISSING);
  });

  it.each(inputs)('authenticate(%s) resolves with { ok: false }', async (_, input) => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('inputs')) });
    const pending = authority.authenticate(input as never);
    expect(pending).toBeInstanceOf(Promise);
    // null means "no header" like undefined; any other non-string is not a usable header value.
    expect(await pending).toEqual(input === null ? MISSING : MALFORMED);
  });

  it('an array holding the one valid value is accepted, a String object of it is not', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('inputs')) });
    const header = `Bearer ${authority.issue()}`;
    expect(await authority.authenticate([header])).toMatchObject({ ok: true, keyId: 'inputs' });
    expect(await authority.authenticate(new String(header) as never)).toEqual(MALFORMED);
    expect(await authority.verify(new String(authority.issue()) as never)).toEqual(MISSING);
  });

  it('a token signed with HMAC over arbitrary bytes is refused, not thrown', async () => {
    const authority = await opened({ store: new MemorySecretStore(recordOf('inputs')) });
    const key = keyOf('inputs');
    const header = Buffer.from([0xff, 0xfe, 0x00, 0x7b]).toString('base64url');
    const payload = Buffer.from('{"a":1}').toString('base64url');
    const signature = createHmac('sha256', key).update(`${header}.${payload}`).digest('base64url');
    expect(await authority.verify(`${header}.${payload}.${signature}`)).toEqual(MALFORMED);
  });
});
