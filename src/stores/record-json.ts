// The secret's JSON text, `{"version":1,"id":…,"key":<base64url>,"createdAt":<ISO 8601>}`: one codec for every
// store that keeps the record as text (the secret file, a keychain entry), so that each reads what the other wrote.
import { recordProblem } from '../authority/record.js';
import type { SecretRecord } from '../authority/types.js';

/** The one format this version reads and writes. */
export const FORMAT_VERSION = 1;
/** Date, time and zone, as `toISOString()` writes them (years beyond 9999 included); groups are checked below. */
const ISO_DATE_TIME =
  /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * The date of an ISO 8601 date-time with an explicit zone, or `undefined`. Stricter than `Date.parse`, which
 * takes "1" or "January 2, 2020", rolls February 30 over to March, and reads a zone-less time in the
 * machine's local zone (so the token's `iat` would depend on where the file is read).
 */
function parseIsoDateTime(text: string): Date | undefined {
  const match = ISO_DATE_TIME.exec(text);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second, zoneHours = 0, zoneMinutes = 0] = match
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part))) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number?,
    number?,
  ];
  const lastDay = new Date(0);
  lastDay.setUTCFullYear(year, month, 0); // day 0 of the next month: the last day of this one
  if (month < 1 || month > 12 || day < 1 || day > lastDay.getUTCDate()) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || zoneHours > 23 || zoneMinutes > 59) return undefined;
  const time = Date.parse(text);
  return Number.isNaN(time) ? undefined : new Date(time);
}

function isCanonicalBase64url(text: string): boolean {
  return /^[A-Za-z0-9_-]*$/.test(text) && Buffer.from(text, 'base64url').toString('base64url') === text;
}

/** The text a store writes for `record` (which the caller has checked with `recordProblem`), newline-terminated. */
export function serializeRecord(record: SecretRecord): string {
  return `${JSON.stringify({
    version: FORMAT_VERSION,
    id: record.id,
    key: Buffer.from(record.key.buffer, record.key.byteOffset, record.key.byteLength).toString('base64url'),
    createdAt: record.createdAt.toISOString(),
  })}\n`;
}

/**
 * The record in `text`, or the error `corrupt(problem)` returns (thrown), where `problem` says what is wrong in
 * words that never include the key. Refuses what `recordProblem` refuses (a short or guessable key, a bad id)
 * with the error `invalid(problem)` returns: well-formed text, but a record no authority may use.
 */
export function parseRecord(
  text: string,
  corrupt: (problem: string) => Error,
  invalid: (problem: string) => Error = corrupt,
): SecretRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw corrupt(text.trim() === '' ? 'it is empty' : 'it is not valid JSON (truncated or damaged)');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw corrupt('it is not a JSON object');
  const { version, id, key, createdAt } = value as Record<string, unknown>;
  if (version !== FORMAT_VERSION) {
    const shown = typeof version === 'number' ? String(version) : typeof version;
    throw corrupt(`its version is ${shown}; this release reads version ${FORMAT_VERSION}`);
  }
  if (typeof key !== 'string' || !isCanonicalBase64url(key)) throw corrupt('"key" is not base64url text');
  const created = typeof createdAt === 'string' ? parseIsoDateTime(createdAt) : undefined;
  if (created === undefined) throw corrupt('"createdAt" is not an ISO 8601 date and time with a time zone');
  const record = { id, key: new Uint8Array(Buffer.from(key, 'base64url')), createdAt: created };
  const problem = recordProblem(record);
  if (problem !== undefined) throw invalid(problem);
  return record as SecretRecord;
}
