// The record as one Redis value: the secret file's JSON fields plus the generation that compare-and-set counts and
// the id of the record it replaced; and the rollback marker that stands for a secret lost to a Redis rollback.
import { LauncherAuthError, type SecretRecord } from 'launcher-auth';
import { parseRecord, serializeRecord } from 'launcher-auth/store-kit';
import { rollbackError } from './errors.js';
import { MARKER_PREFIX } from './history.js';
import { encodeLine, parseLine, type Line } from './line.js';

/** A stored value is a few hundred bytes; anything far larger is not a record. */
const MAX_VALUE_CHARS = 64 * 1024;

/** Where the key's text may start at the earliest in a stored value: past the 128 characters SLOWLOG keeps. */
const KEY_FROM = 130;

/**
 * The value to store for `record` as generation `generation`, replacing the record `prev` ('' if none), with the
 * records it supersedes (`line`). The key comes last, after JSON whitespace that puts it beyond the first 128
 * characters, which is all SLOWLOG keeps of an argument (the script's own `SET` is logged too).
 */
export function encodeRecord(record: SecretRecord, generation: number, prev: string, line?: Line): string {
  const { key, ...fields } = JSON.parse(serializeRecord(record)) as { key: string } & Record<string, unknown>;
  const head = JSON.stringify({ ...fields, generation, prev, ...lineField(line) }).slice(0, -1);
  return `${head},${' '.repeat(Math.max(0, KEY_FROM - head.length - 1))}"key":${JSON.stringify(key)}}`;
}

/**
 * The rollback marker: a value without a key, written over a rolled-back record that no instance could safely write
 * forward. Every instance refuses every token until an operator rotates (a save replaces it like any record). Its
 * field `rolledBack` belongs to the stored format, which instances of every version read.
 */
export function encodeMarker(id: string, generation: number, prev: string, line?: Line): string {
  return JSON.stringify({ rolledBack: true, id: `${MARKER_PREFIX}${id}`, generation, prev, ...lineField(line) });
}

/** The stored `line` field; none when the line is not known (as in a record written before lines). */
function lineField(line: Line | undefined): { line?: string } {
  return line === undefined ? {} : { line: encodeLine(line) };
}

/** Whether a stored value is a rollback marker (see {@link encodeMarker}). */
function isMarker(value: string): boolean {
  return value.startsWith('{"rolledBack":true');
}

/** The place of a rollback marker in the sequence of records, or `undefined` when `value` is not a marker. */
export function markerOf(
  value: unknown,
): { generation: number; id: string; prev: string; line: Line | undefined } | undefined {
  if (typeof value !== 'string' || !isMarker(value) || value.length > MAX_VALUE_CHARS) return undefined;
  try {
    const { generation, id, prev, line } = JSON.parse(value) as Record<string, unknown>;
    if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 1) return undefined;
    if (typeof id !== 'string' || !id.startsWith(MARKER_PREFIX) || typeof prev !== 'string') return undefined;
    return { generation, id, prev, line: parseLine(line) };
  } catch {
    return undefined;
  }
}

/**
 * The record and generation in a stored value, refused as the secret file would be, naming the Redis key:
 * `ERR_STORE_CORRUPT` for garbage, `ERR_INVALID_RECORD` for a well-formed record with a short key or a key of one
 * repeated byte. Never includes the value in the message.
 */
export function decodeRecord(
  value: unknown,
  key: string,
): { record: SecretRecord; generation: number; prev: string; line: Line | undefined } {
  const refused =
    (code: 'ERR_STORE_CORRUPT' | 'ERR_INVALID_RECORD') =>
    (problem: string): LauncherAuthError =>
      new LauncherAuthError(
        code,
        `The secret in Redis key "${key}" is unusable: ${problem}. It was left untouched; restore it from a backup, ` +
          'or delete the key to generate a new secret (every token issued so far will stop working).',
      );
  const corrupt = refused('ERR_STORE_CORRUPT');
  if (typeof value !== 'string') throw corrupt('it is not a string value');
  if (isMarker(value)) throw rollbackError(key);
  if (value.length > MAX_VALUE_CHARS)
    throw corrupt(`it is ${value.length} characters, far more than a secret record holds`);
  const record = parseRecord(value, corrupt, refused('ERR_INVALID_RECORD'));
  // parseRecord has parsed it as a JSON object already.
  const { generation, prev = '', line } = JSON.parse(value) as { generation?: unknown; prev?: unknown; line?: unknown };
  if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 1) {
    throw corrupt('"generation" is not a positive whole number');
  }
  if (typeof prev !== 'string') throw corrupt('"prev" is not a string');
  return { record, generation, prev, line: parseLine(line) };
}
