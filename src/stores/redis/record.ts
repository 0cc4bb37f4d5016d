// The record as one Redis value: the secret file's JSON fields plus the generation that compare-and-set counts.
import { LauncherAuthError } from '../../core/errors.js';
import type { SecretRecord } from '../../core/types.js';
import { parseRecordText, recordFields } from '../record-json.js';

/** A stored value is a few hundred bytes; anything far larger is not a record. */
const MAX_VALUE_CHARS = 64 * 1024;

/** The value to store for `record` as generation `generation`. */
export function encodeRecord(record: SecretRecord, generation: number): string {
  return JSON.stringify({ ...recordFields(record), generation });
}

/**
 * The record and generation in a stored value; `ERR_STORE_CORRUPT` naming the Redis key when the value is not a
 * usable record (garbage, a short key, a key of one repeated byte). Never includes the value in the message.
 */
export function decodeRecord(value: unknown, key: string): { record: SecretRecord; generation: number } {
  let generation = 0;
  const parsed =
    typeof value !== 'string'
      ? 'it is not a string value'
      : value.length > MAX_VALUE_CHARS
        ? `it is ${value.length} characters, far more than a secret record holds`
        : parseRecordText(value, (fields) => {
            const { generation: stored } = fields;
            if (typeof stored !== 'number' || !Number.isSafeInteger(stored) || stored < 1) {
              return '"generation" is not a positive whole number';
            }
            generation = stored;
            return undefined;
          });
  if (typeof parsed === 'string') {
    throw new LauncherAuthError(
      'ERR_STORE_CORRUPT',
      `The secret in Redis key "${key}" is unusable: ${parsed}. It was left untouched; restore it from a backup, ` +
        'or delete the key to generate a new secret (every token issued so far will stop working).',
    );
  }
  return { record: parsed, generation };
}
