// The simulated Redis runs the store's own scripts: their replies, their errors and Redis's conversions, exactly.
import { createHash } from 'node:crypto';
import { SimpleError } from 'redis';
import { describe, expect, it } from 'vitest';
import { encodeMarker } from '../../src/codec.js';
import { CONFIRM, DROP, LEAVE, LOAD, PENDING, SAVE, SAVE_PADDING } from '../../src/scripts.js';
import { Keyspace } from './keyspace.js';

const KEYS = ['auth', '{auth}:instances'];
type Value = string | ReadonlyMap<string, string>;
const INSTANCES = '{auth}:instances';
const TABLE = [INSTANCES];

function record(id: string, generation: unknown, prev = ''): string {
  return JSON.stringify({
    version: 1,
    id,
    generation,
    prev,
    createdAt: '2026-01-01T00:00:00.000Z',
    key: 'k'.repeat(43),
  });
}

function save(space: Keyspace, expected: number, expectedId: string, value: string, instance = 'me'): unknown {
  return space.eval(SAVE, KEYS, [
    String(expected),
    expectedId,
    'auth:rotated',
    instance,
    ...Array<string>(SAVE_PADDING).fill(''),
    value,
  ]);
}

function confirm(space: Keyspace, instance: string, held: string, saving = '', seq = 1): unknown {
  return space.eval(CONFIRM, KEYS, [instance, held, saving, String(seq), `epoch-${seq}`, 'auth:acked']);
}

function errorOf(run: () => unknown): Error | undefined {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

/** `script: <sha1>, on @user_script:<line>.`, which Redis 7 appends to an error raised inside a script. */
function where(script: string, needle: string): string {
  const line = script.split('\n').findIndex((text) => text.includes(needle)) + 1;
  return `script: ${createHash('sha1').update(script).digest('hex')}, on @user_script:${line}.`;
}

function world() {
  const published: string[] = [];
  const space = new Keyspace({
    serverId: 'run1',
    onPublish: (channel, message) => void published.push(`${channel} ${message}`),
  });
  return { space, published };
}

describe('Keyspace runs the store scripts', () => {
  it('answers LOAD, SAVE, CONFIRM, PENDING, DROP and leave as Redis does', () => {
    const { space, published } = world();
    expect(space.eval(LOAD, KEYS, ['me'])).toEqual(['missing', 0, '', '', 'run1:run1', '', 0, '', '']);
    expect(save(space, 0, '', record('a', 1))).toEqual(['ok', 1, 'a', '', 'run1:run1', '', 0, '']);
    expect(save(space, 0, '', record('b', 1))).toEqual(['conflict', 1, 'a', '', 'run1:run1', '', 0, '']);
    expect(confirm(space, 'me', 'a')).toEqual(['ok', 1, 'a', '', 'run1:run1', 'epoch-1', 1, '']);
    expect(confirm(space, 'me', 'a', '', 2)).toEqual(['ok', 1, 'a', '', 'run1:run1', 'epoch-1', 2, '']);
    expect(confirm(space, 'other', 'zz', '', 7)).toEqual(['stale', 1, 'a', '', 'run1:run1', 'epoch-1', 0, '']);
    expect(save(space, 1, 'a', record('b', 2, 'a'))).toEqual(['ok', 2, 'b', 'a', 'run1:run1', 'epoch-1', 2, '']);
    // Saving b, holding a: renewed, and its acknowledgement stays a's.
    expect(confirm(space, 'third', 'a', 'b', 3)).toEqual(['ok', 2, 'b', 'a', 'run1:run1', 'epoch-1', 3, '']);
    expect(space.eval(PENDING, KEYS, ['me', 'b'])).toEqual([
      'ok',
      2,
      'b',
      'a',
      'run1:run1',
      'epoch-1',
      2,
      '',
      'third',
      '3',
    ]);
    expect(space.eval(DROP, TABLE, ['third', '9'])).toBe(0);
    expect(space.eval(DROP, TABLE, ['third', '3'])).toBe(0);
    expect(space.eval(LEAVE, TABLE, ['me'])).toBe(1);
    expect(space.eval(LEAVE, TABLE, ['me'])).toBe(0);
    expect(space.eval(LOAD, KEYS, ['me'])).toEqual([
      'value',
      0,
      '',
      '',
      'run1:run1',
      'epoch-1',
      0,
      '',
      record('b', 2, 'a'),
    ]);
    expect(published).toEqual(['auth:rotated a', 'auth:acked a', 'auth:rotated b']);
    expect(space.snapshot()).toEqual(
      new Map<string, Value>([
        ['auth', record('b', 2, 'a')],
        [INSTANCES, new Map([['@epoch', 'epoch-1']])],
      ]),
    );
  });

  it('names a restarted server anew by its run_id, though it kept its replication id (Redis 4.0 restored it)', () => {
    const { space } = world();
    save(space, 0, '', record('a', 1));
    expect(space.eval(LOAD, KEYS, ['me'])).toMatchObject({ 4: 'run1:run1' });
    space.restore(new Map(), 'run2');
    space.replid = 'run1';
    expect(space.eval(LOAD, KEYS, ['me'])).toMatchObject({ 4: 'run2:run1' });
  });

  it.each([
    ['garbage', 'not json'],
    ['a JSON without generation', JSON.stringify({ id: 'a' })],
    ['generation 1.5', record('a', 1.5)],
    ['generation 0', record('a', 0)],
    ['generation "2"', record('a', '2')],
    ['an id that is a number', JSON.stringify({ id: 5, generation: 1 })],
    ['a JSON array', '[1, 2]'],
  ])('calls %s corrupt, and never overwrites it', (_, stored) => {
    const { space, published } = world();
    space.restore(new Map([['auth', stored]]), 'run2');
    expect(save(space, 0, '', record('a', 1))).toEqual(['corrupt', 0, '', '', 'run2:run2', '', 0, '']);
    expect(confirm(space, 'me', 'a')).toEqual(['corrupt', 0, '', '', 'run2:run2', '', 0, '']);
    expect(space.eval(LOAD, KEYS, ['me'])).toEqual(['value', 0, '', '', 'run2:run2', '', 0, '', stored]);
    expect(space.snapshot()).toEqual(new Map([['auth', stored]]));
    expect(published).toEqual([]);
  });

  it('reads a rollback marker and a lenient cjson number as records, as Redis does', () => {
    const { space } = world();
    const marker = encodeMarker('m', 3, 'a');
    space.restore(new Map([['auth', marker]]), 'run1');
    expect(confirm(space, 'me', 'rollback:m')).toEqual(['ok', 3, 'rollback:m', 'a', 'run1:run1', 'epoch-1', 1, '']);
    space.restore(new Map([['auth', '{"id":"x","generation":0x10}']]), 'run1');
    expect(confirm(space, 'me', 'x')).toEqual(['ok', 16, 'x', '', 'run1:run1', 'epoch-1', 1, '']);
  });

  it('raises a script error with Redis 7 wording, after the writes the script made before it', () => {
    const { space, published } = world();
    const error = errorOf(() => save(space, 0, '', '{"id":'));
    expect(error).toBeInstanceOf(SimpleError);
    expect(error?.message).toBe(
      `ERR user_script:${SAVE.split('\n').findIndex((line) => line.includes('cjson.decode(text)')) + 1}: ` +
        `Expected value but found T_END at character 7 ${where(SAVE, 'cjson.decode(text)')}`,
    );
    // Redis scripts have no rollback: the SET before the failing line stays.
    expect(space.snapshot()).toEqual(new Map([['auth', '{"id":']]));
    expect(published).toEqual([]);
    const fresh = world().space;
    const publish = "redis.call('PUBLISH', ARGV[3], saved.id)";
    expect(errorOf(() => save(fresh, 0, '', '5'))?.message).toBe(
      `ERR user_script:${SAVE.split('\n').findIndex((line) => line.includes(publish)) + 1}: ` +
        `attempt to index local 'saved' (a number value) ${where(SAVE, publish)}`,
    );
  });

  it('refuses a hash op on a string and a string op on a hash with WRONGTYPE', () => {
    const { space } = world();
    space.restore(
      new Map<string, Value>([
        ['auth', new Map([['f', 'v']])],
        [INSTANCES, 'a string'],
      ]),
      'run1',
    );
    const wrongType = 'WRONGTYPE Operation against a key holding the wrong kind of value';
    expect(errorOf(() => space.eval(LOAD, KEYS, ['me']))?.message).toBe(
      `${wrongType} ${where(LOAD, "local text = redis.call('GET', KEYS[1])")}`,
    );
    expect(errorOf(() => space.eval(DROP, TABLE, ['me', '1']))?.message).toBe(
      `${wrongType} ${where(DROP, "redis.call('HGET'")}`,
    );
    expect(errorOf(() => space.eval("return redis.pcall('GET', KEYS[1])", KEYS, []))?.message).toBe(wrongType);
  });

  it("converts between Lua and Redis's replies by Redis's rules", () => {
    const { space } = world();
    expect(space.eval("return {1.9, -1.9, true, false, 'a', nil, 'b'}", [], [])).toEqual([1, -1, 1, null, 'a']);
    expect(space.eval("return {ok='fine'}", [], [])).toBe('fine');
    expect(errorOf(() => space.eval("return {err='boom'}", [], []))?.message).toBe('boom');
    expect(space.eval("return redis.call('SET', KEYS[1], 7)", ['n'], [])).toBe('OK');
    expect(space.eval("return {redis.call('GET', KEYS[1]), redis.call('GET', 'none')}", ['n'], [])).toEqual([
      '7',
      null,
    ]);
    expect(space.eval("return redis.call('HSET', KEYS[1], 'a', 1, 'b', 2.5)", ['h'], [])).toBe(2);
    expect(space.eval("return redis.call('HGETALL', KEYS[1])", ['h'], [])).toEqual(['a', '1', 'b', '2.5']);
    expect(space.eval('return cjson.decode(\'[1.5, "\\\\u00e9"]\')[2]', [], [])).toBe('é');
    expect(space.eval("return tostring(cjson.decode('[null]')[1] == cjson.null)", [], [])).toBe('true');
    expect(space.eval("return cjson.encode({1, 'a/b', {x = 1.5}})", [], [])).toBe('[1,"a\\/b",{"x":1.5}]');
    expect(space.eval("return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')", [], [])).toBe('run1');
    // A server's replication id is new with its run_id, and with each promotion (the deployment sets it then).
    const replid = "return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')";
    expect(space.eval(replid, [], [])).toBe('run1');
    expect(space.eval("return string.match(redis.call('INFO'), 'master_replid:(%w+)')", [], [])).toBe('run1');
    expect(space.eval("return redis.call('INFO', 'replication'):find('run_id', 1, true)", [], [])).toBeNull();
    expect(space.eval("return redis.call('PUBLISH', 'c', 'm')", [], [])).toBe(0);
  });

  // The texts redis-server 7.0.15 gives for the same calls.
  it.each([
    ['{"a" "b"}', 'Expected colon but found T_STRING at character 6'],
    ['[1,]', 'Expected value but found T_ARR_END at character 4'],
    ['{"a":1,}', 'Expected object key string but found T_OBJ_END at character 8'],
    ['"\\x"', 'Expected value but found invalid escape code at character 2'],
    ['"abc', 'Expected value but found unexpected end of string at character 5'],
    ['[1 2]', 'Expected comma or array end but found T_NUMBER at character 4'],
    ['tru', 'Expected value but found invalid token at character 1'],
    ['{"a":1', 'Expected comma or object end but found T_END at character 7'],
    ['[-]', 'Expected value but found invalid number at character 2'],
    ['[1e]', 'Expected comma or array end but found invalid token at character 3'],
    ['["\\ud800\\u0041"]', 'Expected value but found invalid unicode escape code at character 3'],
    ['{"a":[1,{"b":nan}]} x', 'Expected the end but found invalid token at character 21'],
    [' ', 'Expected value but found T_END at character 2'],
    ['[0x1p4, -Infinity, 1.5e3, .5]', 'Expected value but found invalid token at character 27'],
    ['\u0000{}', 'JSON parser does not support UTF-16 or UTF-32'],
    ['{1:2}', 'Expected object key string but found T_NUMBER at character 2'],
    [`${'['.repeat(1001)}${']'.repeat(1001)}`, 'Found too many nested data structures (1001) at character 1001'],
  ])('refuses the JSON %j as cjson does', (text, message) => {
    const { space } = world();
    expect(space.eval('local ok, e = pcall(cjson.decode, ARGV[1]) return {tostring(ok), e}', [], [text])).toEqual([
      'false',
      message,
    ]);
  });

  it('reads the numbers cjson reads, as Lua numbers', () => {
    const { space } = world();
    const script = 'local t = cjson.decode(ARGV[1]) for i, v in ipairs(t) do t[i] = tostring(v % 1 ~= 0) end return t';
    expect(space.eval(script, [], ['[0x1p4, -Infinity, 1.5e3, 1.5, 01, 2]'])).toEqual([
      'false',
      'true',
      'false',
      'true',
      'false',
      'false',
    ]);
  });

  it('refuses unknown commands, bad arguments and global variables with Redis 7 wording', () => {
    const { space } = world();
    const message = (script: string) => errorOf(() => space.eval(script, [], []))?.message;
    const at = (script: string) => where(script, script.split('\n').at(-1) ?? '');
    for (const [script, text] of [
      ["return redis.call('EXPIRE', 'k', 1)", 'ERR Unknown Redis command called from script'],
      ["return redis.call('GET')", 'ERR Wrong number of args calling Redis command from script'],
      ["return redis.call('GET', nil)", 'ERR Lua redis lib command arguments must be strings or integers'],
      ["return redis.call('HSET', 'h', 'a')", 'ERR Wrong number of args calling Redis command from script'],
      ["return redis.call('HSET', 'h', 'a', 'b', 'c')", "ERR wrong number of arguments for 'hset' command"],
      ['x = 1', 'ERR user_script:1: Attempt to modify a readonly table'],
      [
        'return undefinedName',
        "ERR user_script:1: Script attempted to access nonexistent global variable 'undefinedName'",
      ],
      ['local x = 5\nreturn x.id', "ERR user_script:2: attempt to index local 'x' (a number value)"],
    ] as const) {
      expect(message(script)).toBe(`${text} ${at(script)}`);
    }
    expect(space.eval("return redis.pcall('EXPIRE', 'k', 1)['err']", [], [])).toBe(
      'ERR Unknown Redis command called from script',
    );
  });

  it('throws what onPublish throws, and the next script runs as usual', () => {
    const failure = new Error('the world failed');
    const space = new Keyspace({
      serverId: 'run1',
      onPublish: () => {
        throw failure;
      },
    });
    expect(errorOf(() => save(space, 0, '', record('a', 1)))).toBe(failure);
    space.onPublish = undefined;
    expect(save(space, 1, 'a', record('b', 2, 'a'))).toEqual(['ok', 2, 'b', 'a', 'run1:run1', '', 0, '']);
  });

  it('keeps each keyspace, and each snapshot, apart', () => {
    const { space } = world();
    const other = new Keyspace({ serverId: 'run9' });
    save(space, 0, '', record('a', 1));
    confirm(space, 'me', 'a');
    const snapshot = space.snapshot();
    expect(other.eval(LOAD, KEYS, ['me'])).toEqual(['missing', 0, '', '', 'run9:run9', '', 0, '', '']);
    save(space, 1, 'a', record('b', 2, 'a'));
    space.eval(LEAVE, TABLE, ['me']);
    expect(snapshot).toEqual(
      new Map<string, Value>([
        ['auth', record('a', 1)],
        [
          INSTANCES,
          new Map([
            ['@epoch', 'epoch-1'],
            ['me', '1:a'],
          ]),
        ],
      ]),
    );
    other.restore(snapshot, 'run10');
    confirm(other, 'you', 'a', '', 4);
    expect(snapshot.get(INSTANCES)).toEqual(
      new Map([
        ['@epoch', 'epoch-1'],
        ['me', '1:a'],
      ]),
    );
    expect(other.eval(LOAD, KEYS, ['you'])).toEqual([
      'value',
      0,
      '',
      '',
      'run10:run10',
      'epoch-1',
      4,
      '',
      record('a', 1),
    ]);
    expect(space.eval(LOAD, KEYS, ['you'])).toEqual([
      'value',
      0,
      '',
      '',
      'run1:run1',
      'epoch-1',
      0,
      '',
      record('b', 2, 'a'),
    ]);
    other.restore(undefined, 'run11');
    expect(other.snapshot()).toEqual(new Map());
    expect(other.serverId).toBe('run11');
  });
});
