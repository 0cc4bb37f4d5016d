// The lease protocol's atomic steps, as Lua scripts run by Redis. Every time compared is Redis's own (TIME), so
// no two machines' wall clocks are ever compared with each other.

/** Redis's clock in milliseconds, and a parsed record's generation (0 when absent or unparsable). */
const PRELUDE = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function current(key)
  local text = redis.call('GET', key)
  if not text then return nil, 0 end
  local ok, value = pcall(cjson.decode, text)
  if not ok or type(value) ~= 'table' or type(value.id) ~= 'string' or type(value.generation) ~= 'number'
    or value.generation < 1 or value.generation % 1 ~= 0 then
    return false, 0
  end
  return value, value.generation
end
`;

/**
 * Compare-and-set of the record. KEYS: record. ARGV: expected generation, the new value (whose generation is
 * expected + 1), the channel. Returns 'ok', 'conflict' (the stored generation differs: nothing changed) or
 * 'corrupt' (the stored value is not a record: it is never overwritten).
 */
export const SAVE = `${PRELUDE}
local value, generation = current(KEYS[1])
if value == false then return 'corrupt' end
if generation ~= tonumber(ARGV[1]) then return 'conflict' end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], tostring(generation + 1))
return 'ok'
`;

/**
 * Renews an instance's lease, and acknowledges the current generation, only when the instance holds the current
 * key. KEYS: record, instance table. ARGV: instance id, the id of the key the instance holds, the id of a record
 * the instance is saving right now ('' if none), the lease in ms. An instance in the middle of its own save still
 * holds the previous key: its lease is renewed with its acknowledgement unchanged, so that a later rotation waits
 * for it. Returns 'ok' or 'stale' (the lease is not renewed: the instance must reload first).
 */
export const CONFIRM = `${PRELUDE}
local value, generation = current(KEYS[1])
if not value then return 'stale' end
local expiry = now_ms() + tonumber(ARGV[4])
if value.id == ARGV[2] then
  redis.call('HSET', KEYS[2], ARGV[1], string.format('%d:%d', expiry, generation))
  return 'ok'
end
if ARGV[3] ~= '' and value.id == ARGV[3] then
  local entry = redis.call('HGET', KEYS[2], ARGV[1])
  local acked = entry and string.match(entry, ':(%d+)$') or '0'
  redis.call('HSET', KEYS[2], ARGV[1], string.format('%d:%s', expiry, acked))
  return 'ok'
end
return 'stale'
`;

/**
 * How many other instances still hold a live lease without having acknowledged a generation. Entries whose lease
 * ran out are removed on the way (their instance trusts nothing any more, and registers again when it can).
 * KEYS: instance table. ARGV: this instance's id, the generation.
 */
export const PENDING = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local entries = redis.call('HGETALL', KEYS[1])
local waiting = 0
for i = 1, #entries, 2 do
  local expiry, acked = string.match(entries[i + 1], '^(%d+):(%d+)$')
  if not expiry or tonumber(expiry) <= now then
    redis.call('HDEL', KEYS[1], entries[i])
  elseif entries[i] ~= ARGV[1] and tonumber(acked) < tonumber(ARGV[2]) then
    waiting = waiting + 1
  end
end
return waiting
`;

/** Names of the Redis keys and channel derived from the record's key. */
export interface KeyNames {
  readonly record: string;
  readonly instances: string;
  readonly channel: string;
}

/**
 * The instance table shares the record's hash slot (so that a script may touch both on Redis Cluster): a key
 * without a hash tag hashes whole, which is what `{key}` tags.
 */
export function keyNames(key: string): KeyNames {
  const tagged = key.includes('{') ? key : `{${key}}`;
  return { record: key, instances: `${tagged}:instances`, channel: `${key}:rotated` };
}
