// The simulated Redis: a keyspace of strings and hashes on which the store's scripts run from their own Lua source
// (in Lua 5.4 compiled to WebAssembly, lua.ts), with Redis 7's conversions, errors and libraries, and each reply as
// node-redis (RESP2) hands it to the store. The differential test (test/stores/redis/keyspace.differential.test.ts)
// holds it equal to a real redis-server. Where Lua 5.4 still differs from Redis's 5.1, the store's scripts do not
// look: a float that holds an integer prints as `3.0` (Redis: `3`), and 5.1's deprecated functions are missing.
import { createHash } from 'node:crypto';
// node-redis's error class from its own module: the `redis` package's entry loads every module of node-redis and
// of its four extensions, a fifth of a second at every start of the simulator, for this one class (the same one).
import { SimpleError } from '@redis/client/dist/lib/errors.js';
import { JSON_NULL, decode, encode } from './cjson.js';
import {
  LUA_OK,
  LUA_REGISTRYINDEX,
  LUA_RIDX_GLOBALS,
  LUA_TBOOLEAN,
  LUA_TNIL,
  LUA_TNUMBER,
  LUA_TSTRING,
  LUA_TTABLE,
  api,
  cFunction,
  cString,
  integer,
  load,
  pushText,
  raise,
  textAt,
  type LuaState,
} from './lua.js';

/** What a keyspace holds: strings and hashes. */
export type Data = ReadonlyMap<string, string | ReadonlyMap<string, string>>;

type Value = string | Map<string, string>;
/** A command's reply before it is handed to Lua (RESP2's types). */
type Reply = string | null | number | readonly string[] | { readonly ok: string } | { readonly err: string };

const WRONGTYPE = { err: 'WRONGTYPE Operation against a key holding the wrong kind of value' } as const;
const OK = { ok: 'OK' } as const;

/** Redis's command table for what the scripts call: arity (negative: at least) and the command. */
const COMMANDS: Readonly<Record<string, readonly [number, (space: Keyspace, args: readonly string[]) => Reply]>> = {
  get: [2, (space, args) => stringAt(space, args[1] ?? '') ?? null],
  set: [-3, (space, args) => (args.length === 3 ? (space.data.set(args[1] ?? '', args[2] ?? ''), OK) : SYNTAX)],
  del: [-2, (space, args) => args.slice(1).filter((key) => space.data.delete(key)).length],
  hget: [
    3,
    (space, args) => {
      const hash = hashAt(space, args[1] ?? '');
      return hash === false ? WRONGTYPE : (hash?.get(args[2] ?? '') ?? null);
    },
  ],
  hexists: [
    3,
    (space, args) => {
      const hash = hashAt(space, args[1] ?? '');
      return hash === false ? WRONGTYPE : hash?.has(args[2] ?? '') === true ? 1 : 0;
    },
  ],
  hgetall: [
    2,
    (space, args) => {
      const hash = hashAt(space, args[1] ?? '');
      if (hash === false) return WRONGTYPE;
      const items: string[] = [];
      for (const [field, value] of hash ?? []) items.push(field, value);
      return items;
    },
  ],
  hset: [
    -4,
    (space, args) => {
      if (args.length % 2 === 1) return { err: "ERR wrong number of arguments for 'hset' command" };
      const key = args[1] ?? '';
      const found = hashAt(space, key);
      if (found === false) return WRONGTYPE;
      const hash = found ?? new Map<string, string>();
      space.data.set(key, hash);
      let created = 0;
      for (let i = 2; i < args.length; i += 2) {
        if (!hash.has(args[i] ?? '')) created += 1;
        hash.set(args[i] ?? '', args[i + 1] ?? '');
      }
      return created;
    },
  ],
  hdel: [
    -3,
    (space, args) => {
      const key = args[1] ?? '';
      const hash = hashAt(space, key);
      if (hash === false) return WRONGTYPE;
      if (hash === undefined) return 0;
      const removed = args.slice(2).filter((field) => hash.delete(field)).length;
      if (hash.size === 0) space.data.delete(key);
      return removed;
    },
  ],
  publish: [
    3,
    (space, args) => {
      const received = space.onPublish?.(args[1] ?? '', args[2] ?? '');
      return typeof received === 'number' ? received : 0;
    },
  ],
  info: [-1, (space, args) => infoOf(space, args)],
};
const SYNTAX = { err: 'ERR syntax error' } as const;
/** The command table by name, lower and upper case (as the scripts write them): a lookup without a copy. */
const BY_NAME = new Map(
  Object.entries(COMMANDS).flatMap(([name, entry]) => [
    [name, entry],
    [name.toUpperCase(), entry],
  ]),
);

function stringAt(space: Keyspace, key: string): string | undefined | typeof WRONGTYPE {
  const value = space.data.get(key);
  return typeof value === 'object' ? WRONGTYPE : value;
}

/** The hash at `key`: undefined when there is none, false when the key holds a string. */
function hashAt(space: Keyspace, key: string): Map<string, string> | undefined | false {
  const value = space.data.get(key);
  return typeof value === 'string' ? false : value;
}

const EVERY_SECTION = new Set(['default', 'all', 'everything']);
/** Each keyspace's sections as last built, for the server it was then: the scripts ask for them in every run. */
const built = new WeakMap<Keyspace, { serverId: string; replid: string; server: string; replication: string }>();
/**
 * `INFO` as Redis 7.0 lays out its server and replication sections (the fields the scripts could read: `run_id`
 * and `master_replid` are the ones they do), each section's fields followed by a blank line when another follows.
 * `args`: the command, then the sections (none: the default ones).
 */
function infoOf(space: Keyspace, args: readonly string[]): string {
  let server = args.length === 1;
  let replication = args.length === 1;
  for (let index = 1; index < args.length; index += 1) {
    const section = (args[index] ?? '').toLowerCase();
    server ||= section === 'server' || EVERY_SECTION.has(section);
    replication ||= section === 'replication' || EVERY_SECTION.has(section);
  }
  const { serverId, replid } = space;
  let sections = built.get(space);
  if (sections?.serverId !== serverId || sections.replid !== replid) {
    const serverFields = ['redis_version:7.0.15', 'redis_mode:standalone', 'arch_bits:64', `run_id:${serverId}`];
    const replicationFields = [
      'role:master',
      'connected_slaves:0',
      'master_failover_state:no-failover',
      `master_replid:${replid}`,
      `master_replid2:${'0'.repeat(40)}`,
      'master_repl_offset:0',
      'second_repl_offset:-1',
    ];
    sections = {
      serverId,
      replid,
      server: `# Server\r\n${[...serverFields, 'tcp_port:6379'].join('\r\n')}\r\n`,
      replication: `# Replication\r\n${replicationFields.join('\r\n')}\r\n`,
    };
    built.set(space, sections);
  }
  if (server && replication) return `${sections.server}\r\n${sections.replication}`;
  return server ? sections.server : replication ? sections.replication : '';
}

// One Lua state for the process, as Redis has one per server: the scripts' own state is only their globals, which
// no script writes (Redis refuses it, and so does this state).
const L: LuaState = api._luaL_newstate();
const ERR = cString('err');
const OK_FIELD = cString('ok');
let current: Keyspace | undefined;
/** A JavaScript error thrown while a script ran, to rethrow when it ends. */
let escaped: { readonly error: unknown } | undefined;

function luaError(message: string): never {
  api._lua_createtable(L, 0, 1);
  pushText(L, message);
  api._lua_setfield(L, -2, ERR);
  return raise(L);
}

/** Redis 7.0's `%.17g` for a number handed to a command. */
function numberArgument(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 2 ** 53) return String(n);
  if (!Number.isFinite(n)) return Number.isNaN(n) ? (Object.is(n, NaN) ? 'nan' : '-nan') : n > 0 ? 'inf' : '-inf';
  const [mantissa = '', exponent] = n.toPrecision(17).split('e');
  const trimmed = mantissa.includes('.') ? mantissa.replace(/\.?0+$/, '') : mantissa;
  if (exponent === undefined) return trimmed;
  const power = Number(exponent);
  return `${trimmed}e${power < 0 ? '-' : '+'}${String(Math.abs(power)).padStart(2, '0')}`;
}

const isArray = (reply: Reply): reply is readonly string[] => Array.isArray(reply);

function pushReply(reply: Reply): void {
  if (reply === null) api._lua_pushboolean(L, 0);
  else if (typeof reply === 'string') pushText(L, reply);
  else if (typeof reply === 'number') api._lua_pushinteger(L, integer(reply));
  else if (isArray(reply)) {
    api._lua_createtable(L, reply.length, 0);
    for (let index = 0; index < reply.length; index += 1) {
      pushText(L, reply[index] ?? '');
      api._lua_rawseti(L, -2, integer(index + 1));
    }
  } else {
    const field = 'ok' in reply ? OK_FIELD : ERR;
    api._lua_createtable(L, 0, 1);
    pushText(L, 'ok' in reply ? reply.ok : reply.err);
    api._lua_setfield(L, -2, field);
  }
}

/** A command's error: raised by `redis.call`, returned as `{err=...}` by `redis.pcall`. */
function fail(raise: boolean, message: string): number {
  if (raise) return luaError(message);
  pushReply({ err: message });
  return 1;
}

/** `redis.call` (an error raised) and `redis.pcall` (an error returned as `{err=...}`). */
function command(raise: boolean) {
  return (state: LuaState): number => {
    const count = api._lua_gettop(state);
    if (count === 0) return fail(raise, 'ERR Please specify at least one argument for this redis lib call');
    const args: string[] = [];
    for (let index = 1; index <= count; index += 1) {
      const type = api._lua_type(state, index);
      if (type === LUA_TNUMBER) args.push(numberArgument(api._lua_tonumberx(state, index, 0)));
      else if (type === LUA_TSTRING) args.push(textAt(state, index) ?? '');
      else return fail(raise, 'ERR Lua redis lib command arguments must be strings or integers');
    }
    const name = args[0] ?? '';
    const found = BY_NAME.get(name) ?? BY_NAME.get(name.toLowerCase());
    if (found === undefined) return fail(raise, 'ERR Unknown Redis command called from script');
    const [arity, run] = found;
    if ((arity > 0 && arity !== count) || count < -arity)
      return fail(raise, 'ERR Wrong number of args calling Redis command from script');
    let reply: Reply;
    try {
      if (current === undefined) throw new Error('redis.call outside of a script');
      reply = run(current, args);
    } catch (error) {
      // A JavaScript error (onPublish's, say) must not unwind through Lua: it ends the script, and eval throws it.
      escaped ??= { error };
      return luaError('ERR the simulated Redis failed');
    }
    if (reply !== null && typeof reply === 'object' && 'err' in reply) return fail(raise, reply.err);
    pushReply(reply);
    return 1;
  };
}

/** A global that does not exist, read or written: refused as Redis refuses it. */
function refuse(message: (name: string) => string) {
  return (state: LuaState): number => {
    api._luaL_where(state, 1);
    pushText(state, message(textAt(state, 2) ?? ''));
    api._lua_concat(state, 2);
    return raise(state);
  };
}

// Redis's libraries (base, table, string, math, cjson; not bit, struct or cmsgpack, which no script uses), its `redis`
// table, its error handler (which adds where the error was) and its protection of the globals.
for (const [name, open] of [
  ['_G', api._luaopen_base],
  ['table', api._luaopen_table],
  ['string', api._luaopen_string],
  ['math', api._luaopen_math],
  ['debug', api._luaopen_debug],
] as const) {
  api._luaL_requiref(L, cString(name), cFunction(open), 1);
  api._lua_settop(L, 0);
}
api._lua_createtable(L, 0, 3);
api._lua_pushcclosure(L, cFunction(decode), 0);
api._lua_setfield(L, -2, cString('decode'));
api._lua_pushcclosure(L, cFunction(encode), 0);
api._lua_setfield(L, -2, cString('encode'));
api._lua_pushlightuserdata(L, JSON_NULL);
api._lua_setfield(L, -2, cString('null'));
api._lua_setglobal(L, cString('cjson'));
api._lua_createtable(L, 0, 2);
api._lua_pushcclosure(L, cFunction(command(true)), 0);
api._lua_setfield(L, -2, cString('call'));
api._lua_pushcclosure(L, cFunction(command(false)), 0);
api._lua_setfield(L, -2, cString('pcall'));
api._lua_setglobal(L, cString('redis'));
const SETUP = `
local dbg = debug
debug = nil
print, loadfile, dofile = nil, nil, nil
loadstring, unpack = load, table.unpack
return function (err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
`;
if (load(L, SETUP, cString('=setup')) !== LUA_OK || api._lua_pcallk(L, 0, 1, 0, 0, 0) !== LUA_OK) {
  throw new Error(`the simulated Redis could not start: ${textAt(L, -1) ?? '?'}`);
}
const HANDLER = BigInt(api._luaL_ref(L, LUA_REGISTRYINDEX));
api._lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
api._lua_createtable(L, 0, 2);
api._lua_pushcclosure(
  L,
  cFunction(refuse((name) => `Script attempted to access nonexistent global variable '${name}'`)),
  0,
);
api._lua_setfield(L, -2, cString('__index'));
api._lua_pushcclosure(L, cFunction(refuse(() => 'Attempt to modify a readonly table')), 0);
api._lua_setfield(L, -2, cString('__newindex'));
api._lua_setmetatable(L, -2);
const GLOBALS = BigInt(api._luaL_ref(L, LUA_REGISTRYINDEX));
const SCRIPT_NAME = cString('@user_script');

interface Compiled {
  readonly ref: bigint;
  readonly sha: string;
}
/** Each script compiled once, as Redis caches it by its SHA1. */
const compiled = new Map<string, Compiled>();

function compile(script: string): Compiled {
  let found = compiled.get(script);
  if (found === undefined) {
    const sha = createHash('sha1').update(script).digest('hex');
    if (load(L, script, SCRIPT_NAME) !== LUA_OK) {
      const message = textAt(L, -1) ?? '';
      api._lua_settop(L, 0);
      throw new SimpleError(`ERR Error compiling script (new function): ${message}`);
    }
    found = { ref: BigInt(api._luaL_ref(L, LUA_REGISTRYINDEX)), sha };
    compiled.set(script, found);
  }
  return found;
}

function setArray(globals: number, name: string, items: readonly string[]): void {
  pushText(L, name);
  api._lua_createtable(L, items.length, 0);
  for (let index = 0; index < items.length; index += 1) {
    pushText(L, items[index] ?? '');
    api._lua_rawseti(L, -2, integer(index + 1));
  }
  api._lua_rawset(L, globals);
}

/** A C cast of a double to `long long` on x86-64 (out of range: the "integer indefinite" value). */
function longLong(n: number): bigint {
  return Number.isFinite(n) && n >= -(2 ** 63) && n < 2 ** 63 ? BigInt(Math.trunc(n)) : -(2n ** 63n);
}

/** An integer reply as node-redis reads it: digit by digit into a double (beyond 2^53 each step rounds). */
function integerReply(n: number): number {
  // Most replies are small integers (generations, renewal numbers): the same number (+0 for -0).
  if (Number.isSafeInteger(n)) return n + 0;
  const value = longLong(n);
  if (value >= -(2n ** 53n) && value <= 2n ** 53n) return Number(value);
  let result = 0;
  // In node-redis's order of operations: each step rounds.
  for (const digit of (value < 0n ? -value : value).toString()) result = result * 10 + digit.charCodeAt(0) - 48;
  return value < 0n ? -result : result;
}

/** Pushes the field `name` of the table at `table` (no metamethod), and returns its type. */
function field(table: number, name: string): number {
  pushText(L, name);
  return api._lua_rawget(L, table);
}

/** Redis's reply for the Lua value at `index` (its rules, luaReplyToRedisReply), then node-redis's value for it. */
function replyAt(index: number, top: boolean): unknown {
  switch (api._lua_type(L, index)) {
    case LUA_TSTRING:
      return textAt(L, index) ?? '';
    case LUA_TNUMBER:
      return integerReply(api._lua_tonumberx(L, index, 0));
    case LUA_TBOOLEAN:
      return api._lua_toboolean(L, index) !== 0 ? 1 : null;
    case LUA_TTABLE:
      break;
    default:
      return null;
  }
  const table = index < 0 ? api._lua_gettop(L) + 1 + index : index;
  if (field(table, 'err') === LUA_TSTRING) {
    const error = (textAt(L, -1) ?? '').replace(/[\r\n]/g, ' ');
    api._lua_settop(L, -2);
    if (top) throw new SimpleError(error);
    return new SimpleError(error);
  }
  api._lua_settop(L, -2);
  if (field(table, 'ok') === LUA_TSTRING) {
    const status = (textAt(L, -1) ?? '').replace(/[\r\n]/g, ' ');
    api._lua_settop(L, -2);
    return status;
  }
  api._lua_settop(L, -2);
  const items: unknown[] = [];
  for (let j = 1; api._lua_rawgeti(L, table, integer(j)) !== LUA_TNIL; j += 1) {
    items.push(replyAt(-1, false));
    api._lua_settop(L, -2);
  }
  api._lua_settop(L, -2);
  return items;
}

let runningSha = '';
/** A script's error (the handler's table on the top of the stack): its `err`, and where it was raised. */
function raisedError(): SimpleError {
  const table = api._lua_gettop(L);
  if (api._lua_type(L, table) !== LUA_TTABLE) return new SimpleError(`ERR Error running script ${runningSha}`);
  const message = field(table, 'err') === LUA_TNIL ? null : textAt(L, -1);
  field(table, 'source');
  const source = textAt(L, -1);
  field(table, 'line');
  const line = textAt(L, -1);
  api._lua_settop(L, table);
  const where = source !== null && line !== null ? ` script: ${runningSha}, on ${source}:${line}.` : '';
  return new SimpleError(`${lua51(message ?? '')}${where}`.replace(/[\r\n]/g, ' '));
}

/** Lua 5.3's wording of a runtime error in Lua 5.1's (Redis's Lua), for the errors a script can raise. */
function lua51(message: string): string {
  return message.replace(
    /attempt to (index|call|perform arithmetic on|concatenate|get length of) a (\w+) value \((local|global|field|upvalue|method) '([^']*)'\)/,
    "attempt to $1 $3 '$4' (a $2 value)",
  );
}

/** A Redis keyspace (one logical database) on which scripts run. */
export class Keyspace {
  /** What `INFO server` reports as `run_id`: the world changes it when the server restarts or fails over. */
  serverId: string;
  /**
   * What `INFO replication` reports as `master_replid`: new when the server starts (with its `run_id`) and whenever
   * it is promoted; a replica reports its primary's.
   */
  replid: string;
  /** Told every message a script publishes; may return how many subscribers received it (PUBLISH's reply, else 0). */
  onPublish: ((channel: string, message: string) => unknown) | undefined;
  /** The keys: read and written by the commands above only. */
  readonly data = new Map<string, Value>();

  constructor(options: { serverId: string; onPublish?: (channel: string, message: string) => unknown }) {
    this.serverId = options.serverId;
    this.replid = options.serverId;
    this.onPublish = options.onPublish;
  }

  /**
   * `EVAL script numkeys keys... args...`: the reply as node-redis (RESP2) decodes it (strings, numbers, `null`,
   * arrays, a status as its text); an error reply is thrown as node-redis's `SimpleError` with Redis's text.
   */
  eval(script: string, keys: readonly string[], args: readonly string[]): unknown {
    const { ref, sha } = compile(script);
    api._lua_settop(L, 0);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, HANDLER);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, GLOBALS);
    setArray(2, 'KEYS', keys);
    setArray(2, 'ARGV', args);
    api._lua_settop(L, 1);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    const previous = current;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- redis.call, called from Lua, acts on the keyspace whose script runs
    current = this;
    runningSha = sha;
    try {
      escaped = undefined;
      const status = api._lua_pcallk(L, 0, 1, 1, 0, 0);
      const failure = escaped as { readonly error: unknown } | undefined;
      if (failure !== undefined) throw failure.error;
      if (status === LUA_OK) return replyAt(2, true);
      throw raisedError();
    } finally {
      current = previous;
      api._lua_settop(L, 0);
    }
  }

  /** A deep copy of the keys (a dump, or what a replica holds). */
  snapshot(): Data {
    return copy(this.data);
  }

  /**
   * Replaces every key by `data`'s (none when `undefined`), under `serverId`: a new one is a new start of the server
   * (a new replication id too); the same one, a replica's resync (which then takes its primary's replication id).
   */
  restore(data: Data | undefined, serverId: string): void {
    this.data.clear();
    for (const [key, value] of copy(data ?? new Map())) this.data.set(key, value);
    if (serverId !== this.serverId) this.replid = serverId;
    this.serverId = serverId;
  }
}

function copy(data: Data): Map<string, Value> {
  // After every write, for each replica: a loop, not arrays of entries.
  const result = new Map<string, Value>();
  for (const [key, value] of data) result.set(key, typeof value === 'string' ? value : new Map(value));
  return result;
}
