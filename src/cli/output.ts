// What the CLI may print of what it was given: nothing that could be a token or a key, wherever it came from
// (a pasted token as a path, an option name, a URL, an environment variable's name or value), and no control
// character that a terminal would obey.
import { printable } from '../authority/errors.js';

/** Where the CLI writes. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Exit codes, as the usage text documents them. */
export const EXIT = Object.freeze({ ok: 0, checkFailed: 1, usage: 2, store: 3, internal: 70 });

/** A usage error (exit 2): one line that says what is wrong and what to do; main() adds where to read more. */
export class UsageError extends Error {}

/** The store cannot be used as it is set up (exit 3): one line that says what is wrong and what to do. */
export class StoreSetupError extends Error {}

export const HIDDEN = '[hidden: looks like a token]';

/** A word of a message: base64url characters, maybe in dot-separated parts as a JWT is. */
const WORD = /[\w-]+(?:\.[\w-]+)*/g;
/** A key or a signature: random base64url mixes lower case, upper case and digits (a UUID or a name does not). */
const RANDOM = /^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)[\w-]{32,}$/;

function couldBeToken(word: string): boolean {
  // `eyJ` is `{"` in base64url: how every JWT, and each of its first two parts, starts.
  if (word.includes('eyJ')) return true;
  const parts = word.split('.');
  if (parts.length >= 3 && parts.filter((part) => part.length >= 8).length >= 2) return true;
  return parts.some((part) => RANDOM.test(part));
}

/** `text` with every word that could be a token or a key replaced by {@link HIDDEN}. */
export function redacted(text: string): string {
  return text.replace(WORD, (word) => (couldBeToken(word) ? HIDDEN : word));
}

/** A line as the CLI prints it: {@link redacted}, then {@link printable}; its one line ending kept. */
export function safeLine(text: string): string {
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  return `${printable(redacted(body))}${body === text ? '' : '\n'}`;
}

/** `text` as one POSIX shell word, so that a printed command can be pasted as it is. */
export function shellQuoted(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
