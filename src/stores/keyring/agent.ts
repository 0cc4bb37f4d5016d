// Keychain calls, run in a helper process with a deadline. @napi-rs/keyring's calls are synchronous native code: on
// Linux its constructor connects to the session bus, and a bus or Secret Service that never answers (or an unlock
// prompt nobody answers) blocks the calling thread for good. In a worker thread that would also keep the process
// from ever exiting, so the calls run in a child process, which can be killed.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** One request to the helper. `value` is the entry's text (for `set`); it travels over the private IPC pipe only. */
export interface AgentRequest {
  op: 'get' | 'set';
  service: string;
  account: string;
  value?: string;
}

/**
 * What a call came to. `unavailable`: no keychain to talk to (no bus, no Secret Service, locked, no answer in
 * time, the package missing); `failed`: the keychain answered with an error. `detail` never holds a secret.
 */
export type AgentReply =
  { ok: true; value: string | null } | { ok: false; kind: 'unavailable' | 'failed' | 'ambiguous'; detail: string };

const PACKAGE = '@napi-rs/keyring';

/**
 * Runs in the helper (plain CommonJS, given to `node -e`). Pins Linux to the Secret Service: without the pin,
 * @napi-rs/keyring 2 silently falls back to the kernel keyring, which forgets everything at reboot. Only
 * messages with a known, secret-free shape are passed on.
 */
const HELPER_SOURCE = `'use strict';
let binding, loadError;
try { binding = require(process.argv[1]); } catch (error) { loadError = error; }
const pin = { linux: { store: 'secret-service' } };
const KNOWN = /^(Platform failure|Couldn't access platform storage|Entry is matched by|Attribute|No matching entry)/;
process.on('disconnect', () => process.exit(0));
process.on('message', (request) => {
  let reply;
  if (binding === undefined) {
    reply = { ok: false, kind: 'unavailable', detail: 'the package ${PACKAGE} could not be loaded (' + String(loadError && loadError.code || 'no code') + ')' };
  } else {
    try {
      const entry = new binding.Entry(request.service, request.account, pin);
      if (request.op === 'get') reply = { ok: true, value: entry.getPassword() ?? null };
      else { entry.setPassword(request.value); reply = { ok: true, value: null }; }
    } catch (error) {
      const message = String(error && error.message).split('\\n')[0].slice(0, 300);
      const kind = /^(Platform failure|Couldn't access platform storage)/.test(message) ? 'unavailable'
        : /^Entry is matched by/.test(message) ? 'ambiguous' : 'failed';
      reply = { ok: false, kind, detail: KNOWN.test(message) ? message : 'the keychain reported an error (' + String(error && error.code) + ')' };
    }
  }
  process.send({ id: request.id, reply });
});
`;

interface Pending {
  resolve(reply: AgentReply): void;
  timer: NodeJS.Timeout;
  keepAlive: boolean;
}

interface Helper {
  child: ChildProcess;
  /** The session bus address the helper was started with: a helper for another bus is replaced. */
  bus: string | undefined;
  pending: Map<number, Pending>;
  /** How many pending calls hold the process alive (the channel is referenced while this is above 0). */
  holding: number;
}

let packagePath: string | undefined;
let helper: Helper | undefined;
let nextId = 1;

function here(): string {
  // The CommonJS build has __filename; the ESM build (and the sources) have import.meta.url.
  return typeof __filename === 'string' ? __filename : fileURLToPath(import.meta.url);
}

/** Where @napi-rs/keyring is, resolved from this package as a plain import would be; `undefined` when missing. */
function resolvePackage(): string | undefined {
  if (packagePath === undefined) {
    try {
      packagePath = createRequire(here()).resolve(PACKAGE);
    } catch {
      return undefined;
    }
  }
  return packagePath;
}

function settle(owner: Helper, id: number, reply: AgentReply): void {
  const pending = owner.pending.get(id);
  if (pending === undefined) return;
  owner.pending.delete(id);
  clearTimeout(pending.timer);
  if (pending.keepAlive && --owner.holding === 0) owner.child.channel?.unref();
  pending.resolve(reply);
}

function stop(owner: Helper, reply: AgentReply): void {
  if (helper === owner) helper = undefined;
  owner.child.kill('SIGKILL');
  for (const id of [...owner.pending.keys()]) settle(owner, id, reply);
}

function start(path: string, bus: string | undefined): Helper {
  // In Electron, process.execPath is the app: ELECTRON_RUN_AS_NODE makes it a plain Node.js (needs the
  // runAsNode fuse). Neither execArgv nor NODE_OPTIONS: the host's loaders and inspector are not the helper's.
  const { NODE_OPTIONS: _hostOptions, ...env } = process.env;
  const child = spawn(process.execPath, ['-e', HELPER_SOURCE, path], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    env: { ...env, ELECTRON_RUN_AS_NODE: '1' },
    windowsHide: true,
  });
  const owner: Helper = { child, bus, pending: new Map(), holding: 0 };
  // The helper never keeps the host alive on its own; it exits when the host does (its IPC channel closes).
  child.unref();
  child.channel?.unref();
  child.on('message', (message: { id?: unknown; reply?: AgentReply }) => {
    if (typeof message?.id === 'number' && message.reply !== undefined) settle(owner, message.id, message.reply);
  });
  const gone = (): void =>
    stop(owner, { ok: false, kind: 'unavailable', detail: 'the keychain helper process ended before it answered' });
  child.on('exit', gone);
  child.on('error', gone);
  return owner;
}

/**
 * Runs one keychain call in the helper, started on first use (and again after a call timed out). Resolves within
 * `timeout` ms whatever the keychain does: after that the helper is killed and the call is `unavailable`.
 * `keepAlive`: whether the pending call holds the host process alive (not so for background polls).
 */
export function callKeyring(request: AgentRequest, timeout: number, keepAlive: boolean): Promise<AgentReply> {
  const path = resolvePackage();
  if (path === undefined) {
    return Promise.resolve({
      ok: false,
      kind: 'unavailable',
      detail: `the optional package ${PACKAGE} is not installed; run npm install ${PACKAGE}`,
    });
  }
  const bus = process.env.DBUS_SESSION_BUS_ADDRESS;
  if (helper !== undefined && helper.bus !== bus) {
    stop(helper, { ok: false, kind: 'unavailable', detail: 'the session bus changed during the call' });
  }
  const owner = (helper ??= start(path, bus));
  const id = nextId++;
  return new Promise<AgentReply>((resolve) => {
    const timer = setTimeout(() => {
      stop(owner, {
        ok: false,
        kind: 'unavailable',
        detail: `the keychain did not answer within ${timeout} ms (a locked keyring waiting for an unlock prompt, or a bus that does not answer)`,
      });
    }, timeout);
    if (!keepAlive) timer.unref();
    else if (owner.holding++ === 0) owner.child.channel?.ref();
    owner.pending.set(id, { resolve, timer, keepAlive });
    try {
      owner.child.send({ id, ...request });
    } catch {
      stop(owner, { ok: false, kind: 'unavailable', detail: 'the keychain helper process could not be reached' });
    }
  });
}
