// The simulator's Redis (test/sim/keyspace.ts) against a real redis-server: the same seeded sequences of the store's
// own scripts, and of raw writes of odd values, give the same reply, the same keys and the same messages at each step.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { encodeMarker, encodeRecord } from '../src/codec.js';
import { CONFIRM, DROP, LEAVE, LOAD, PENDING, SAVE, SAVE_PADDING, keyNames } from '../src/scripts.js';
import { Keyspace, type Data } from './sim/keyspace.js';
import { Prng } from './sim/prng.js';
import { until } from '../../../test/support/poll.js';
import { budget } from '../../../test/support/machine.js';
import { SKIP_REASON, sharedRedis } from '../../../test/support/redis-server.js';

const NAMES = keyNames('auth');
const BOTH = [NAMES.record, NAMES.instances];
const INSTANCES = ['i1', 'i2', 'i3'];
const IDS = ['a', 'b', 'c', 'rollback:m'];
const SEEDS = [1, 2, 3, 4, 5];
const STEPS = 700;
const SERVER = '<server>';

/** Every key the server holds, with its type and contents (hash fields in the server's order). */
const DUMP = `
local out = {}
for _, key in ipairs(redis.call('KEYS', '*')) do
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'string' then
    table.insert(out, {key, redis.call('GET', key)})
  else
    table.insert(out, {key, redis.call('HGETALL', key)})
  end
end
return out
`;
const RAW_SET = "return redis.call('SET', KEYS[1], ARGV[1])";
const RAW_HASH = "redis.call('DEL', KEYS[1]) return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])";
const RAW_DEL = "return redis.call('DEL', KEYS[1])";

function recordValue(id: string, generation: number, prev: string): string {
  const key = new Uint8Array(32).map((_, index) => index * 7 + id.charCodeAt(0));
  return encodeRecord({ id, key, createdAt: new Date(Date.UTC(2026, 0, 1)) }, generation, prev);
}

/** Stored values a store never writes, so that every 'corrupt' path and every conversion runs. */
const ODD: readonly string[] = [
  'garbage',
  '',
  '{',
  JSON.stringify({ id: 'a' }),
  JSON.stringify({ id: 'a', generation: 1.5 }),
  JSON.stringify({ id: 'a', generation: 0 }),
  JSON.stringify({ id: 'a', generation: '2' }),
  JSON.stringify({ id: 'a', generation: -1 }),
  JSON.stringify({ id: 'b', generation: 1e20, prev: 'a' }),
  JSON.stringify({ id: 'b', generation: 2 ** 53 + 2, prev: 5 }),
  encodeMarker('m', 2, 'a'),
  JSON.stringify({ rolledBack: true, id: 'rollback:m' }),
  `{"id":"a","generation":1,"pad":"${'x'.repeat(100_000)}"}`,
  '[1, 2]',
  '{"id":5,"generation":1}',
  '{"id":"c","generation":0x10}',
  '{"id":"c","generation":Infinity}',
  '{"id":"c","generation":01}',
  '{"id":"\\u00e9","generation":1}',
  '{"id":"a","generation":1,"prev":"\\ud800"}',
  `{"id":"a\u0001","generation":3}`,
  `${'['.repeat(1001)}${']'.repeat(1001)}`,
  'null',
  '"text"',
  '5',
  '{"generation":1}',
  '{"id":{},"generation":1}',
  '{"id":1.5,"generation":1}',
];

interface Outcome {
  readonly reply?: unknown;
  readonly error?: string;
}

/** The reply, with the side's own server identity (`<run_id>:<master_replid>`) replaced by a placeholder. */
function normalised(reply: unknown, server: string): unknown {
  if (Array.isArray(reply)) return reply.map((item) => normalised(item, server));
  return reply === server ? SERVER : reply;
}

function keysOf(data: Data): unknown[] {
  return [...data]
    .map(([key, value]) => [key, typeof value === 'string' ? value : [...value].flat()] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function dumped(reply: unknown): unknown[] {
  return (reply as Array<[string, string | string[]]>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

describe.skipIf(SKIP_REASON !== undefined)('the simulated keyspace against redis-server', () => {
  const redis = sharedRedis();
  const name = `gives the same replies, keys and messages over ${SEEDS.length} seeds of ${STEPS} steps`;
  // 7,000 round trips to redis-server: about 7 s on a quiet machine, and each waits for a core when other work loads
  // the machine (over 24 s seen beside two busy processes), so only a stuck run reaches this deadline.
  const timeout = budget(120_000);

  it(name, { timeout }, async () => {
    const { client } = redis;
    const info = await client.info('server');
    const realRunId = /run_id:(\w+)/.exec(info)?.[1] ?? '';
    expect(realRunId).toMatch(/^[0-9a-f]{40}$/);
    const realReplid = /master_replid:(\w+)/.exec(await client.info('replication'))?.[1] ?? '';
    expect(realReplid).toMatch(/^[0-9a-f]{40}$/);
    // What every answer names the server by: its run_id and its replication id.
    const realServer = `${realRunId}:${realReplid}`;
    const heard: string[] = [];
    const subscriber = client.duplicate();
    subscriber.on('error', () => undefined);
    await subscriber.connect();
    await subscriber.subscribe([NAMES.channel, NAMES.acked], (message, channel) => heard.push(`${channel} ${message}`));
    const told: string[] = [];
    const space = new Keyspace({
      serverId: 'sim0',
      onPublish: (channel, message) => void told.push(`${channel} ${message}`),
    });
    let steps = 0;
    let errors = 0;
    let corrupt = 0;
    let raised = 0;
    try {
      for (const seed of SEEDS) {
        await client.sendCommand(['FLUSHALL']);
        space.restore(undefined, `sim${seed}`);
        const prng = new Prng(seed);
        for (let step = 0; step < STEPS; step += 1) {
          const [script, keys, args] = draw(prng, space);
          const real: Outcome = await client.sendCommand(['EVAL', script, String(keys.length), ...keys, ...args]).then(
            (reply) => ({ reply: normalised(reply, realServer) }),
            (error: unknown) => ({ error: `${(error as Error).name} ${(error as Error).message}` }),
          );
          let simulated: Outcome;
          try {
            simulated = { reply: normalised(space.eval(script, keys, args), `${space.serverId}:${space.replid}`) };
          } catch (error) {
            simulated = { error: `${(error as Error).name} ${(error as Error).message}` };
          }
          const where = `seed ${seed} step ${step}`;
          expect(isDeepStrictEqual(simulated, real), `${where}: the replies differ`).toBe(true);
          const held = dumped(await client.sendCommand(['EVAL', DUMP, '0']));
          expect(isDeepStrictEqual(keysOf(space.snapshot()), held), `${where}: the keys differ`).toBe(true);
          steps += 1;
          if (real.error !== undefined) errors += 1;
          if (real.error?.includes('user_script:') === true && !real.error.includes('WRONGTYPE')) raised += 1;
          if (Array.isArray(real.reply) && real.reply[0] === 'corrupt') corrupt += 1;
        }
        expect(await until(() => heard.length >= told.length), `seed ${seed}: messages heard`).toBe(true);
        expect(isDeepStrictEqual(heard, told), `seed ${seed}: the published messages differ`).toBe(true);
      }
    } finally {
      subscriber.destroy();
    }
    expect(steps).toBe(SEEDS.length * STEPS);
    // The odd paths ran: errors (a script's own among them), and scripts that found a damaged record.
    expect(errors).toBeGreaterThan(100);
    expect(raised).toBeGreaterThan(5);
    expect(corrupt).toBeGreaterThan(50);
    expect(told.length).toBeGreaterThan(100);
  });
});

/** One step: a script of the store with arguments from a small alphabet, or a raw write of an odd value. */
function draw(prng: Prng, space: Keyspace): [string, string[], string[]] {
  const instance = prng.pick(INSTANCES);
  const id = () => prng.pick(IDS);
  const seq = () => String(prng.int(1, 4));
  const stored = space.snapshot().get(NAMES.record);
  const current = typeof stored === 'string' ? currentOf(stored) : { generation: 0, id: '' };
  const kind = prng.int(0, 99);
  if (kind < 22) {
    const held = prng.chance(0.6) && current.id !== '' ? current.id : id();
    const saving = prng.chance(0.3) ? id() : '';
    return [CONFIRM, BOTH, [instance, held, saving, seq(), prng.name(), NAMES.acked]];
  }
  if (kind < 46) {
    const fresh = prng.chance(0.7);
    const expected = fresh ? current.generation : prng.int(0, 3);
    const expectedId = fresh ? current.id : prng.pick(['', ...IDS]);
    const value = prng.chance(0.15)
      ? prng.pick(ODD)
      : prng.chance(0.1)
        ? encodeMarker(prng.name(), expected + 1, expectedId)
        : recordValue(id(), expected + prng.int(1, 2), expectedId);
    const padding = Array<string>(SAVE_PADDING).fill('');
    return [SAVE, BOTH, [String(expected), expectedId, NAMES.channel, instance, ...padding, value]];
  }
  if (kind < 56) return [PENDING, BOTH, [instance, id()]];
  if (kind < 66) return [LOAD, BOTH, [instance]];
  if (kind < 73) return [DROP, [NAMES.instances], [instance, seq()]];
  if (kind < 78) return [LEAVE, [NAMES.instances], [instance]];
  if (kind < 86) return [RAW_SET, [NAMES.record], [prng.pick(ODD)]];
  if (kind < 87) return [RAW_HASH, [NAMES.record], ['field', 'value']];
  if (kind < 88) return [RAW_SET, [NAMES.instances], ['not a hash']];
  return [RAW_DEL, [prng.pick(BOTH)], []];
}

/** The record's generation and id as the scripts read them, for arguments that match it often. */
function currentOf(text: string): { generation: number; id: string } {
  try {
    const { generation, id } = JSON.parse(text) as { generation?: unknown; id?: unknown };
    return typeof generation === 'number' && typeof id === 'string' ? { generation, id } : { generation: 0, id: '' };
  } catch {
    return { generation: 0, id: '' };
  }
}
