// The record as one Redis value: the secret file's JSON fields plus the generation that compare-and-set counts.
import { LauncherAuthError } from '../../core/errors.js';
import type { SecretRecord } from '../../core/types.js';
import { parseRecord, serializeRecord } from '../record-json.js';

/** A stored value is a few hundred bytes; anything far larger is not a record. */
const MAX_VALUE_CHARS = 64 * 1024;

/** The value to store for `record` as generation `generation`. */
export function encodeRecord(record: SecretRecord, generation: number): string {
  return JSON.stringify({ ...(JSON.parse(serializeRecord(record)) as object), generation });
}

/**
 * The record and generation in a stored value, refused as the secret file would be, naming the Redis key:
 * `ERR_STORE_CORRUPT` for garbage, `ERR_INVALID_RECORD` for a well-formed record with a short key or a key of one
 * repeated byte. Never includes the value in the message.
 */
export function decodeRecord(value: unknown, key: string): { record: SecretRecord; generation: number } {
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
  if (value.length > MAX_VALUE_CHARS) throw corrupt(`it is ${value.length} characters, far more than a secret record holds`);
  const record = parseRecord(value, corrupt, refused('ERR_INVALID_RECORD'));
  // parseRecord has parsed it as a JSON object already.
  const { generation } = JSON.parse(value) as { generation?: unknown };
  if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 1) {
    throw corrupt('"generation" is not a positive whole number');
  }
  return { record, generation };
}
