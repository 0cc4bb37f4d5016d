// RedisSecretStore against a real redis-server: the conformance kit, the record codec, compare-and-set, aborted
// saves, following rotations by pub/sub and by the periodic re-check, and Redis down at open().
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  LauncherAuthError,
  TokenAuthority,
  isLauncherAuthError,
  type SecretRecord,
  type SecretStore,
} from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { createClient } from 'redis';
import { fixtureRecord, sameRecord } from '../../../test/stores/fixtures/records.js';
import { authErrorOf, until } from '../../../test/support/async.js';
import { startProxy } from '../../../test/support/redis-proxy.js';
import {
  SKIP_REASON,
  connectedClient,
  freePort,
  sharedRedis,
  type Client,
  type RedisServer,
} from '../../../test/support/redis-server.js';
import { budget } from '../../../test/support/machine.js';
import { FAST, expectConformance, renewed } from './topology.js';

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore', () => {
  const shared = sharedRedis();
  let server: RedisServer;
  let client: Client;
  beforeAll(() => {
    ({ server, client } = shared);
  });
  const uniqueKey = (): string => `test:${randomBytes(6).toString('hex')}`;

  async function openAuthority(key: string): Promise<TokenAuthority> {
    const authority = await TokenAuthority.open({ store: new RedisSecretStore({ client, key, ...FAST }) });
    onTestFinished(() => authority.close());
    return authority;
  }

  it('passes the conformance kit', async () => {
    await expectConformance(client, uniqueKey());
  });

  it('stores the file format plus the generation', async () => {
    const key = uniqueKey();
    const store = new RedisSecretStore({ client, key, ...FAST });
    const record = fixtureRecord('redis-format');
    await store.save(record);
    const stored = JSON.parse((await client.get(key)) ?? 'null') as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toEqual(['createdAt', 'generation', 'id', 'key', 'line', 'prev', 'version']);
    expect(stored['generation']).toBe(1);
    // The first record supersedes none, and says so back to the beginning.
    expect(stored['line']).toBe('0');
    expect(stored['version']).toBe(1);
    expect(stored['createdAt']).toBe(record.createdAt.toISOString());
    expect(sameRecord(await store.load(), record)).toBe(true);
  });

  it('refuses wrong options with a TypeError naming the option', () => {
    expect(() => new RedisSecretStore({ client: {} as never })).toThrow(/`client`/);
    expect(() => new RedisSecretStore({ client, key: '' })).toThrow(/`key`/);
    expect(() => new RedisSecretStore({ client, leaseMs: 0 })).toThrow(/`leaseMs`/);
    expect(() => new RedisSecretStore({ client, leaseMs: 1000, driftMargin: 600 })).toThrow(/`driftMargin`/);
    expect(() => new RedisSecretStore({ client, leaseMs: 1000, renewInterval: 950 })).toThrow(/`renewInterval`/);
    expect(() => new RedisSecretStore({ client, commandTimeout: 1.5 })).toThrow(/`commandTimeout`/);
    // At the bound a late answer from a server the instance has left could arrive after the trust it must end.
    expect(() => new RedisSecretStore({ client, ...FAST, commandTimeout: 1100 })).toThrow(
      /`commandTimeout` must be less than `leaseMs \+ driftMargin`/,
    );
    expect(() => new RedisSecretStore({ client, ...FAST, commandTimeout: 1099 })).not.toThrow();
    // Not given, it keeps below the bound of a short lease.
    expect(() => new RedisSecretStore({ client, ...FAST })).not.toThrow();
    for (const replicas of [{ count: 0 }, { count: 'most' }, true, {}]) {
      expect(() => new RedisSecretStore({ client, replicas: replicas as never })).toThrow(/`replicas.count`/);
    }
    expect(() => new RedisSecretStore({ client, replicas: { count: 'majority', timeout: 0 } })).toThrow(
      /`replicas.timeout`/,
    );
  });

  it('a save that lost to another rotation rejects with ERR_SAVE_CONFLICT and changes nothing', async () => {
    const key = uniqueKey();
    const first = new RedisSecretStore({ client, key, ...FAST });
    const second = new RedisSecretStore({ client, key, ...FAST });
    await first.save(fixtureRecord('cas-start'));
    await first.load();
    await second.load();
    await first.save(fixtureRecord('cas-winner'));
    const before = await client.get(key);
    const error = await authErrorOf(second.save(fixtureRecord('cas-late')));
    expect(error.code).toBe('ERR_SAVE_CONFLICT');
    expect(await client.get(key)).toBe(before);
    expect(sameRecord(await second.load(), fixtureRecord('cas-winner'))).toBe(true);
    // Having read the current generation, the same store may save again.
    await second.save(fixtureRecord('cas-after-reading'));
    expect(sameRecord(await first.load(), fixtureRecord('cas-after-reading'))).toBe(true);
  });

  it('a save over its record written forward by another instance (same record, later generation) is no conflict', async () => {
    const key = uniqueKey();
    const first = new RedisSecretStore({ client, key, ...FAST });
    await first.save(fixtureRecord('forward-start'));
    const second = new RedisSecretStore({ client, key, ...FAST });
    await second.load();
    // What another instance's write-back after Redis lost the record leaves: the same record, one generation later,
    // replacing nothing.
    const stored = JSON.parse((await client.get(key)) ?? 'null') as { generation: number; prev: string };
    await client.set(key, JSON.stringify({ ...stored, generation: stored.generation + 1, prev: '' }));
    await second.save(fixtureRecord('forward-next'));
    const saved = JSON.parse((await client.get(key)) ?? 'null') as { generation: number; prev: string; id: string };
    expect({ generation: saved.generation, prev: saved.prev, id: saved.id }).toEqual({
      generation: stored.generation + 2,
      prev: fixtureRecord('forward-start').id,
      id: fixtureRecord('forward-next').id,
    });
    // Another record at that later generation is another rotation: still a conflict, and nothing changes.
    const third = new RedisSecretStore({ client, key, ...FAST });
    await third.load();
    await first.load();
    await third.save(fixtureRecord('forward-winner'));
    const before = await client.get(key);
    expect((await authErrorOf(first.save(fixtureRecord('forward-late')))).code).toBe('ERR_SAVE_CONFLICT');
    expect(await client.get(key)).toBe(before);
  });

  it('a save of a record that a newer one on the same line replaced rejects with ERR_SAVE_CONFLICT and changes nothing', async () => {
    // What the authority asks when a rotation it gave up on lands after it took up the key before it: that key written
    // back. Redis holds the newer record, saved over that key; bringing the key back would be a rollback, which every
    // instance that saw the newer record would take for one.
    const key = uniqueKey();
    const store = new RedisSecretStore({ client, key, ...FAST });
    await store.save(fixtureRecord('line-older'));
    await store.save(fixtureRecord('line-newer'));
    const before = await client.get(key);
    const error = await authErrorOf(store.save(fixtureRecord('line-older')));
    expect(error.code).toBe('ERR_SAVE_CONFLICT');
    expect(error.message).toContain(`"${key}"`);
    expect(await client.get(key)).toBe(before);
    expect(sameRecord(await store.load(), fixtureRecord('line-newer'))).toBe(true);
    // A new record saves as ever.
    await store.save(fixtureRecord('line-next'));
    expect(sameRecord(await store.load(), fixtureRecord('line-next'))).toBe(true);
  });

  it("a load() read by Redis before this store's own save, whose answer is taken in after the save's, is no rollback", async () => {
    const key = uniqueKey();
    const store = new RedisSecretStore({ client, key, leaseMs: 100, renewInterval: 20, driftMargin: 10 });
    await store.save(fixtureRecord('cross-0'));
    await store.load();
    for (let round = 1; round <= 5; round += 1) {
      const before = fixtureRecord(`cross-${round - 1}`);
      const after = fixtureRecord(`cross-${round}`);
      // LOAD is sent first, so Redis runs it before the SAVE; the save's answer has the shorter way in the driver.
      const loading = store.load();
      const saving = store.save(after);
      const loaded = await loading;
      expect(sameRecord(loaded, before) || sameRecord(loaded, after)).toBe(true);
      await saving;
    }
    expect(sameRecord(await store.load(), fixtureRecord('cross-5'))).toBe(true);
  });

  it('two instances creating the first secret at once end on one key', async () => {
    const key = uniqueKey();
    const [a, b] = await Promise.all([openAuthority(key), openAuthority(key)]);
    expect(await until(() => a.keyId === b.keyId, 5_000)).toBe(true);
    expect((await a.verify(b.issue())).ok).toBe(true);
    expect((await b.verify(a.issue())).ok).toBe(true);
  });

  it('two processes without a watch (the command line) that race to create the first secret open on one key', async () => {
    const key = uniqueKey();
    // Both read the empty key before either saves: the second save finds the first one's record.
    let reads = 0;
    let release = (): void => undefined;
    const bothRead = new Promise<void>((resolve) => (release = resolve));
    const unwatched = (): SecretStore => {
      const store = new RedisSecretStore({ client, key, ...FAST });
      return {
        load: async () => {
          const loaded = await store.load();
          reads += 1;
          if (reads === 2) release();
          await bothRead;
          return loaded;
        },
        save: (record, options) => store.save(record, options),
      };
    };
    const [a, b] = await Promise.all([
      TokenAuthority.open({ store: unwatched() }),
      TokenAuthority.open({ store: unwatched() }),
    ]);
    onTestFinished(async () => {
      await a.close();
      await b.close();
    });
    expect(a.keyId).toBe(b.keyId);
    expect((await new RedisSecretStore({ client, key }).load())?.id).toBe(a.keyId);
  });

  const stored = (fields: Record<string, unknown>): string => JSON.stringify(fields);
  const valid = (record: SecretRecord): Record<string, unknown> => ({
    version: 1,
    id: record.id,
    key: Buffer.from(record.key).toString('base64url'),
    createdAt: record.createdAt.toISOString(),
    generation: 3,
  });
  // As a damaged secret file: unreadable text is corrupt; a readable record with an unusable key is invalid.
  const damaged: Array<[string, string, 'ERR_STORE_CORRUPT' | 'ERR_INVALID_RECORD']> = [
    ['garbage', 'not json {', 'ERR_STORE_CORRUPT'],
    ['an empty value', '', 'ERR_STORE_CORRUPT'],
    ['a JSON array', '[]', 'ERR_STORE_CORRUPT'],
    [
      'a short key',
      stored({ ...valid(fixtureRecord('short')), key: Buffer.alloc(16, 7).toString('base64url') }),
      'ERR_INVALID_RECORD',
    ],
    [
      'an all-same-byte key',
      stored({ ...valid(fixtureRecord('same')), key: Buffer.alloc(32, 0).toString('base64url') }),
      'ERR_INVALID_RECORD',
    ],
    ['no generation', stored({ ...valid(fixtureRecord('nogen')), generation: undefined }), 'ERR_STORE_CORRUPT'],
    ['a negative generation', stored({ ...valid(fixtureRecord('neg')), generation: -1 }), 'ERR_STORE_CORRUPT'],
    ['an unknown version', stored({ ...valid(fixtureRecord('v2')), version: 2 }), 'ERR_STORE_CORRUPT'],
  ];
  for (const [name, value, code] of damaged) {
    it(`refuses ${name} with ${code} naming the key, and never overwrites it`, async () => {
      const key = uniqueKey();
      await client.set(key, value);
      const store = new RedisSecretStore({ client, key, ...FAST });
      const error = await authErrorOf(store.load());
      expect(error.code).toBe(code);
      expect(error.message).toContain(`"${key}"`);
      expect(error.message).not.toContain(value.length > 4 ? value.slice(0, 40) : '\u0000');
      expect((await authErrorOf(TokenAuthority.open({ store }))).code).toBe(code);
      expect(await client.get(key)).toBe(value);
      // A save over it is refused too: a damaged value is the operator's to repair.
      const refused = await authErrorOf(store.save(fixtureRecord('over-damaged')));
      expect(
        isLauncherAuthError(refused, 'ERR_STORE_CORRUPT') || isLauncherAuthError(refused, 'ERR_SAVE_CONFLICT'),
      ).toBe(true);
      expect(await client.get(key)).toBe(value);
    });
  }

  it('a save whose signal was aborted changes nothing', async () => {
    const key = uniqueKey();
    const store = new RedisSecretStore({ client, key, ...FAST });
    await store.save(fixtureRecord('abort-start'));
    const before = await client.get(key);
    const controller = new AbortController();
    controller.abort(new LauncherAuthError('ERR_SAVE_FAILED', 'given up'));
    const outcome = await store.save(fixtureRecord('abort-late'), { signal: controller.signal }).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    expect(outcome).not.toBe('resolved');
    expect(await client.get(key)).toBe(before);
    expect(sameRecord(await store.load(), fixtureRecord('abort-start'))).toBe(true);
  });

  it('another instance refuses the old token as soon as rotate() resolves (pub/sub and acknowledgement)', async () => {
    const key = uniqueKey();
    const a = await openAuthority(key);
    const b = await openAuthority(key);
    expect(b.keyId).toBe(a.keyId);
    for (let round = 0; round < 5; round += 1) {
      const old = a.issue();
      const rotating = round % 2 === 0 ? a : b;
      const other = rotating === a ? b : a;
      const fresh = await rotating.rotate();
      // No waiting: rotate() resolved only after the other instance acknowledged the new key.
      expect((await other.verify(old)).ok).toBe(false);
      expect((await other.verify(fresh)).ok).toBe(true);
      expect(other.keyId).toBe(rotating.keyId);
    }
  });

  it(
    'a waiting rotate() reads the table as soon as an acknowledgement is announced, not at its next poll',
    async () => {
      const key = uniqueKey();
      // No poll after the first few (ackPollInterval): only the announcement on `key:acked` can end the wait before
      // the bound (leaseMs + driftMargin after the save), at which a rotation resolves whoever acknowledged. The lease
      // is stretched by the machine factor, as the work that races half of it is slowed by the load.
      const slow = {
        leaseMs: budget(4_000),
        renewInterval: budget(200),
        driftMargin: budget(400),
        ackPollInterval: 60_000,
      } as const;
      const proxy = await startProxy(server.port);
      const viaProxy = await connectedClient(`redis://127.0.0.1:${proxy.port}`);
      const listener = client.duplicate();
      const announced: string[] = [];
      await listener.connect();
      await listener.subscribe(`${key}:acked`, (id) => announced.push(id));
      onTestFinished(async () => {
        viaProxy.destroy();
        listener.destroy();
        await proxy.close();
      });
      const a = await TokenAuthority.open({ store: new RedisSecretStore({ client, key, ...slow }) });
      const b = await TokenAuthority.open({ store: new RedisSecretStore({ client: viaProxy, key, ...slow }) });
      onTestFinished(async () => {
        await a.close();
        await b.close();
      });
      // A rotation resolves early only on a table known for longer than any lease: both renewed for longer.
      const renewalsPastALease = Math.ceil((slow.leaseMs + slow.driftMargin) / slow.renewInterval) + 1;
      expect(await renewed(client, key, renewalsPastALease)).toBe(true);
      /** Scripts Redis ran: the save, the acknowledgement reads and the renewals. */
      const scripts = async (): Promise<number> =>
        [...(await client.info('commandstats')).matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)].reduce(
          (sum, [, calls]) => sum + Number(calls),
          0,
        );
      // b hears of the rotation only after a's quick first reads (1, 2 and 4 ms after the save) are over: Redis ran
      // the save and those three reads (or a renewal of a's in place of one) before b is heard again.
      const scriptsAtCut = await scripts();
      proxy.cut();
      const rotating = a.rotate();
      // Half the bound, from the same clock as the store's own: a rotation that waited for the bound ends after it.
      const halfBound = new Promise<string>((resolve) =>
        // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- the event a rotation that waited for the bound comes after
        setTimeout(() => resolve('half the bound'), (slow.leaseMs + slow.driftMargin) / 2),
      );
      expect(await until(async () => (await scripts()) >= scriptsAtCut + 4, 10_000, 1)).toBe(true);
      proxy.heal();
      // Woken by b's acknowledgement: first of the two events.
      expect(await Promise.race([rotating.then(() => 'rotation'), halfBound])).toBe('rotation');
      const fresh = await rotating;
      expect(b.keyId).toBe(a.keyId);
      expect((await b.verify(fresh)).ok).toBe(true);
      // Each instance announces a record once: when it first acknowledges it, never at a later renewal. Several
      // renewals of both (scripts Redis ran) give the announcement its chances to repeat.
      const scriptsBefore = await scripts();
      expect(await until(async () => (await scripts()) >= scriptsBefore + 10, 10_000, 50)).toBe(true);
      expect(announced.filter((id) => id === a.keyId)).toHaveLength(2);
    },
    budget(20_000),
  );

  it(
    "a dead instance's table entry is removed once its lease is over, after the rotation that waited for it",
    async () => {
      const key = uniqueKey();
      const a = await openAuthority(key);
      const other = await connectedClient(server.url);
      const b = await TokenAuthority.open({ store: new RedisSecretStore({ client: other, key, ...FAST }) });
      const entries = async (): Promise<number> =>
        Object.keys(await client.hGetAll(`{${key}}:instances`)).filter((name) => name !== '@epoch').length;
      expect(await entries()).toBe(2);
      // b dies without leaving: its connection is gone, its entry stays.
      other.destroy();
      await a.rotate();
      expect(await until(async () => (await entries()) === 1, 10_000, 50)).toBe(true);
      await b.close();
    },
    budget(15_000),
  );

  it('the periodic re-check follows a change whose pub/sub message never came', async () => {
    const key = uniqueKey();
    const a = await openAuthority(key);
    const old = a.issue();
    const next = fixtureRecord('written-without-publish');
    await client.set(key, JSON.stringify({ ...valid(next), generation: 2 }));
    expect(await until(() => a.keyId === next.id, 5_000)).toBe(true);
    expect((await a.verify(old)).ok).toBe(false);
  });

  it('a later instance reads the current secret before it accepts anything', async () => {
    const key = uniqueKey();
    const a = await openAuthority(key);
    await a.rotate();
    const late = await openAuthority(key);
    expect(late.keyId).toBe(a.keyId);
    expect((await late.verify(a.issue())).ok).toBe(true);
  });

  it('removes its entry from the instance table before close() resolves, and never closes the host client', async () => {
    const key = uniqueKey();
    const authority = await TokenAuthority.open({ store: new RedisSecretStore({ client, key, ...FAST }) });
    // The table's epoch, and this instance's entry.
    const entries = async (): Promise<string[]> =>
      Object.keys(await client.hGetAll(`{${key}}:instances`)).filter((name) => name !== '@epoch');
    expect(await entries()).toHaveLength(1);
    // close() resolves once the entry is gone: the host may close its client right after.
    await authority.close();
    expect(await entries()).toHaveLength(0);
    expect(client.isReady).toBe(true);
  });

  it('Redis down at open(): ERR_STORE_UNAVAILABLE naming host:port, never the password', async () => {
    const port = await freePort();
    const down = createClient({
      url: `redis://someone:hunter2-password@127.0.0.1:${port}`,
      socket: { reconnectStrategy: () => 50 },
    });
    down.on('error', () => undefined);
    down.connect().catch(() => undefined);
    onTestFinished(() => {
      down.destroy();
    });
    const error = await authErrorOf(
      TokenAuthority.open({ store: new RedisSecretStore({ client: down, commandTimeout: 300, ...FAST }) }),
    );
    expect(error.code).toBe('ERR_STORE_UNAVAILABLE');
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).not.toContain('hunter2');
    expect(error.message).not.toContain('someone');
  });

  it('a client that was never connected: ERR_STORE_UNAVAILABLE at once', async () => {
    const idle = createClient({ socket: { host: '127.0.0.1', port: server.port } });
    const error = await authErrorOf(new RedisSecretStore({ client: idle }).load());
    expect(error.code).toBe('ERR_STORE_UNAVAILABLE');
    expect(error.message).toContain(`127.0.0.1:${server.port}`);
  });
});
