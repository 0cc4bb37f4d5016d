// The protocol's atomic steps, as Lua scripts run by Redis. None reads Redis's clock: every expiry is measured on
// the instances' own monotonic clocks (see lease.ts and acks.ts). Each answers with what the protocol observes
// (reply.ts): the record's generation, id and predecessor, the server's identity (its run_id and replication id),
// the table's epoch, the caller's entry, the record's line.
import { REPLY_HEAD, type ReplyField } from './reply.js';

/** The Lua expression of each field of an answer's head, inside `observed()` below. */
const HEAD_EXPRESSIONS: Readonly<Record<ReplyField, string>> = {
  status: 'status',
  generation: 'value and value.generation or 0',
  id: "value and value.id or ''",
  prev: 'prev',
  // The run_id is new at every start of a server, the replication id at every promotion; a restarted primary may keep
  // the latter (Redis 4.0 restored it from its RDB file whatever the server's role), so the run_id tells a restart.
  serverId:
    "(string.match(info, 'run_id:(%w+)') or '') .. ':' .. (string.match(replication, 'master_replid:(%w+)') or '')",
  epoch: "redis.call('HGET', tbl, '@epoch') or ''",
  ownSeq: 'seq',
  line: "(value and type(value.line) == 'string') and value.line or ''",
};

/** Parsing the record, and the observation every script returns after its own status (in reply.ts's order). */
const PRELUDE = `
local function current(key)
  local text = redis.call('GET', key)
  if not text then return nil end
  local ok, value = pcall(cjson.decode, text)
  if not ok or type(value) ~= 'table' or type(value.id) ~= 'string' or type(value.generation) ~= 'number'
    or value.generation < 1 or value.generation % 1 ~= 0 then
    return false
  end
  return value
end
local function observed(status, value, tbl, instance)
  local info = redis.call('INFO', 'server')
  local replication = redis.call('INFO', 'replication')
  local entry = redis.call('HGET', tbl, instance)
  local seq = entry and tonumber(string.match(entry, '^(%d+):')) or 0
  local prev = (value and type(value.prev) == 'string') and value.prev or ''
  return { ${REPLY_HEAD.map((field) => HEAD_EXPRESSIONS[field]).join(', ')} }
end
`;

/**
 * Renews an instance's entry, and acknowledges the record it holds, only when it holds the current record (or is
 * saving it: then its acknowledgement is left as it was, so that a later rotation still waits for it). Creates
 * the table's epoch with the table. A new acknowledgement is announced on the acknowledgement channel (the record's
 * id), so that a waiting rotation reads the table at once instead of at its next poll. KEYS: record, table. ARGV:
 * instance, held id, saving id ('' if none), renewal number, a fresh epoch, the acknowledgement channel. Returns
 * the observation with status 'ok', 'stale' or 'corrupt'.
 */
export const CONFIRM = `${PRELUDE}
local value = current(KEYS[1])
if value == false then return observed('corrupt', nil, KEYS[2], ARGV[1]) end
if value and (value.id == ARGV[2] or (ARGV[3] ~= '' and value.id == ARGV[3])) then
  if redis.call('HEXISTS', KEYS[2], '@epoch') == 0 then redis.call('HSET', KEYS[2], '@epoch', ARGV[5]) end
  local entry = redis.call('HGET', KEYS[2], ARGV[1])
  local before = entry and string.match(entry, '^%d+:(.*)$') or ''
  local acked = value.id
  if value.id ~= ARGV[2] then acked = before end
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[4] .. ':' .. acked)
  if acked ~= before then redis.call('PUBLISH', ARGV[6], acked) end
  return observed('ok', value, KEYS[2], ARGV[1])
end
return observed('stale', value, KEYS[2], ARGV[1])
`;

/**
 * Empty arguments before the value in {@link SAVE}, so that the value falls beyond what SLOWLOG keeps of a command:
 * its first 31 arguments (the 32nd slot of an entry only says how many more there were).
 */
export const SAVE_PADDING = 24;

/**
 * Compare-and-set of the record on its generation and id. KEYS: record, table. ARGV: expected generation,
 * expected id ('' when missing), the channel, the instance, {@link SAVE_PADDING} empty arguments, then the value
 * (its generation expected + 1 or more, its `prev` the expected id). The value comes last so that SLOWLOG, which
 * keeps 31 arguments of a command and 128 characters of each, never shows it: it is argument 34 (`EVAL`, the
 * script, the key count, 2 keys, 4 arguments, the padding, then the value). Returns the observation with status
 * 'ok', 'conflict' (nothing changed) or 'corrupt' (the stored value is not a record: never overwritten).
 */
export const SAVE = `${PRELUDE}
local value = current(KEYS[1])
if value == false then return observed('corrupt', nil, KEYS[2], ARGV[4]) end
local generation = value and value.generation or 0
local id = value and value.id or ''
if generation ~= tonumber(ARGV[1]) or id ~= ARGV[2] then return observed('conflict', value, KEYS[2], ARGV[4]) end
local text = ARGV[#ARGV]
redis.call('SET', KEYS[1], text)
local saved = cjson.decode(text)
redis.call('PUBLISH', ARGV[3], saved.id)
return observed('ok', saved, KEYS[2], ARGV[4])
`;

/** {@link SAVE}'s arguments, the value last (see above). */
export function saveArgs(
  names: KeyNames,
  instance: string,
  expected: number,
  expectedId: string,
  value: string,
): string[] {
  return [String(expected), expectedId, names.channel, instance, ...Array<string>(SAVE_PADDING).fill(''), value];
}

/**
 * The other instances in the table that have not acknowledged the record `id`, as name, renewal number pairs
 * after the observation. KEYS: record, table. ARGV: this instance, the id.
 */
export const PENDING = `${PRELUDE}
local value = current(KEYS[1])
local reply = observed('ok', value or nil, KEYS[2], ARGV[1])
local entries = redis.call('HGETALL', KEYS[2])
for i = 1, #entries, 2 do
  local name = entries[i]
  if name ~= '@epoch' and name ~= ARGV[1] then
    local seq, acked = string.match(entries[i + 1], '^(%d+):(.*)$')
    if acked ~= ARGV[2] then
      table.insert(reply, name)
      table.insert(reply, seq or '0')
    end
  end
end
return reply
`;

/** Removes an entry if its renewal number is still the one seen (housekeeping). KEYS: table. ARGV: instance, number. */
export const DROP = `
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if entry and string.match(entry, '^(%d+):') == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
`;

/** Removes this instance's entry from the table when it stops watching. KEYS: table. ARGV: instance. */
export const LEAVE = "return redis.call('HDEL', KEYS[1], ARGV[1])";

/** The observation with status 'value' or 'missing', then the stored value. KEYS: record, table. ARGV: this instance. */
export const LOAD = `${PRELUDE}
local text = redis.call('GET', KEYS[1])
local reply = observed(text and 'value' or 'missing', nil, KEYS[2], ARGV[1])
table.insert(reply, text or '')
return reply
`;

/** Names of the Redis keys and channels derived from the record's key. */
export interface KeyNames {
  readonly record: string;
  readonly instances: string;
  /** Rotations: the id of every record saved. */
  readonly channel: string;
  /** Acknowledgements: the id of a record an instance has just acknowledged. */
  readonly acked: string;
}

/**
 * The instance table shares the record's hash slot (so that a script may touch both on Redis Cluster): a key
 * without a hash tag hashes whole, which is what `{key}` tags.
 */
export function keyNames(key: string): KeyNames {
  const tagged = key.includes('{') ? key : `{${key}}`;
  return { record: key, instances: `${tagged}:instances`, channel: `${key}:rotated`, acked: `${key}:acked` };
}
