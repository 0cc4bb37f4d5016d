// The launcher's secret in the OS keychain: one entry (service, account) holding the same JSON as the secret file.
import { LauncherAuthError, printable } from '../../authority/errors.js';
import { recordProblem } from '../../authority/record.js';
import type { SaveOptions, SecretRecord, SecretStore } from '../../authority/types.js';
import { parseRecord, serializeRecord } from '../record-json.js';
import { callKeyring, type AgentReply, type AgentRequest } from './agent.js';

/** Options of {@link KeyringSecretStore}. */
export interface KeyringSecretStoreOptions {
  /**
   * The keychain service the entry belongs to: name it after the application, such as `'com.example.launcher'`.
   * 1 to 256 characters, no control characters. Required.
   */
  service: string;
  /** The account of the entry within the service, such as `'automation'`. 1 to 256 characters, no control characters. Required. */
  account: string;
  /**
   * How often `watch()` reads the entry to notice a secret replaced by another process (a second launcher, the
   * CLI's `rotate`), in ms: keychains send no change notifications. A rotation elsewhere is followed within about
   * this interval. Each poll is one keychain read, made in the background (it never holds the process alive).
   * @default 2000
   */
  pollInterval?: number;
  /**
   * The longest one keychain call may take, in ms. A call that has not answered by then (a locked keyring waiting
   * for an unlock prompt, a session bus that does not answer) is abandoned and fails with `ERR_STORE_UNAVAILABLE`,
   * so `open()` never hangs.
   * @default 10000
   */
  timeout?: number;
}

const OPTION_NAMES = new Set(['service', 'account', 'pollInterval', 'timeout']);
/** A secret entry is about 150 characters; anything far longer is not one. */
const MAX_ENTRY_CHARS = 64 * 1024;

function checkName(value: unknown, option: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what the check refuses
  if (typeof value !== 'string' || value.length === 0 || value.length > 256 || /[\x00-\x1f\x7f]/.test(value)) {
    throw new TypeError(
      `KeyringSecretStore: \`${option}\` must be a string of 1 to 256 characters without control characters.`,
    );
  }
  return value;
}

function checkMilliseconds(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 2_147_483_647) {
    throw new TypeError(`KeyringSecretStore: \`${option}\` must be a positive whole number of milliseconds.`);
  }
  return value;
}

/**
 * Keeps the secret in the operating system's keychain, through the optional peer dependency `@napi-rs/keyring`:
 * the Secret Service on Linux (GNOME Keyring, KWallet, KeePassXC), the login Keychain on macOS, the Credential
 * Manager on Windows. The entry holds the same JSON text as {@link FileSecretStore}'s file.
 *
 * - Every call runs in a small helper process with a deadline ({@link KeyringSecretStoreOptions.timeout}): no
 *   keychain state can block the event loop. No keychain (no Secret Service on the session bus, a locked keyring,
 *   the package not installed) is `ERR_STORE_UNAVAILABLE`, which names the entry and points to `FileSecretStore`.
 * - On Linux the entry is pinned to the Secret Service (with @napi-rs/keyring 2): never the kernel keyring,
 *   which is lost at reboot.
 * - A damaged entry, or one holding a short or guessable key, makes `load()` reject (`ERR_STORE_CORRUPT`) naming
 *   the service and account; nothing here ever overwrites it.
 * - `watch()` polls the entry every `pollInterval` ms.
 */
export class KeyringSecretStore implements SecretStore {
  /** The keychain service of the entry. */
  readonly service: string;
  /** The account of the entry. */
  readonly account: string;
  readonly #pollInterval: number;
  readonly #timeout: number;
  /** The entry's text as last read or written here (`null`: no entry); what a poll compares against. */
  #lastText: string | null | undefined;

  constructor(options: KeyringSecretStoreOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('KeyringSecretStore: the options `{ service, account }` are required.');
    }
    for (const name of Object.keys(options)) {
      if (!OPTION_NAMES.has(name)) throw new TypeError(`KeyringSecretStore: unknown option \`${printable(name)}\`.`);
    }
    this.service = checkName(options.service, 'service');
    this.account = checkName(options.account, 'account');
    this.#pollInterval = checkMilliseconds(options.pollInterval, 'pollInterval', 2000);
    this.#timeout = checkMilliseconds(options.timeout, 'timeout', 10_000);
  }

  async load(): Promise<SecretRecord | undefined> {
    const reply = await this.#call({ op: 'get' }, true);
    const text = this.#value(reply, 'read');
    this.#lastText = text;
    if (text === null) return undefined;
    if (text.length > MAX_ENTRY_CHARS)
      throw this.#corrupt(`it is ${text.length} characters, far more than a secret entry holds`);
    return parseRecord(text, (problem) => this.#corrupt(problem));
  }

  async save(record: SecretRecord, options: SaveOptions = {}): Promise<void> {
    const problem = recordProblem(record);
    if (problem !== undefined) {
      throw new LauncherAuthError(
        'ERR_INVALID_RECORD',
        `Refusing to save an unusable record to ${this.#entry()}: ${problem}.`,
      );
    }
    const text = serializeRecord(record);
    // Given up on before the write: change nothing. Once sent, a keychain write cannot be taken back.
    options.signal?.throwIfAborted();
    this.#value(await this.#call({ op: 'set', value: text }, true), 'write');
    this.#lastText = text;
  }

  watch(onChange: () => Promise<void>): () => void {
    let stopped = false;
    let failing = false;
    let timer: NodeJS.Timeout | undefined;
    const poll = async (): Promise<void> => {
      const reply = await this.#call({ op: 'get' }, false);
      if (stopped) return;
      if (!reply.ok) {
        // Tell the authority once, so that its reload reports the failure (onStoreError); then keep polling.
        if (!failing) {
          failing = true;
          await onChange();
        }
      } else {
        failing = false;
        if (reply.value !== this.#lastText) {
          this.#lastText = reply.value;
          await onChange();
        }
      }
      schedule();
    };
    const schedule = (): void => {
      if (stopped) return;
      // Unreferenced: polling alone never keeps the host process alive.
      timer = setTimeout(() => void poll().catch(schedule), this.#pollInterval).unref();
    };
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  #call(request: Omit<AgentRequest, 'service' | 'account'>, keepAlive: boolean): Promise<AgentReply> {
    return callKeyring({ ...request, service: this.service, account: this.account }, this.#timeout, keepAlive);
  }

  #entry(): string {
    return `the keychain entry (service ${JSON.stringify(this.service)}, account ${JSON.stringify(this.account)})`;
  }

  /** The reply's value, or the coded error it comes to. */
  #value(reply: AgentReply, action: 'read' | 'write'): string | null {
    if (reply.ok) return reply.value;
    if (reply.kind === 'unavailable') {
      throw new LauncherAuthError(
        'ERR_STORE_UNAVAILABLE',
        `Cannot ${action} ${this.#entry()}: the OS keychain is not available (${reply.detail}). On Linux it needs a running, ` +
          'unlocked Secret Service (GNOME Keyring, KWallet, KeePassXC) on the session bus; where there is none ' +
          '(a headless or remote machine), keep the secret in a file with FileSecretStore instead.',
      );
    }
    if (reply.kind === 'ambiguous') throw this.#corrupt(`more than one keychain item matches it (${reply.detail})`);
    throw new LauncherAuthError('ERR_STORE_IO', `Cannot ${action} ${this.#entry()}: ${reply.detail}.`);
  }

  #corrupt(problem: string): LauncherAuthError {
    return new LauncherAuthError(
      'ERR_STORE_CORRUPT',
      `${this.#entry().replace(/^the/, 'The')} is unusable: ${problem}. It was left untouched; restore it, or delete ` +
        'it to generate a new secret (every token issued so far will stop working).',
    );
  }
}
