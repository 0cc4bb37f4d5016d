// A private, real Secret Service for the keyring tests: its own session bus (dbus-daemon) and its own
// gnome-keyring-daemon, unlocked, with HOME and XDG folders in a temporary directory, so that the user's own
// keyring is never touched. Every process started here is a direct child, stopped by its pid.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

const TOOLS = ['dbus-daemon', 'gnome-keyring-daemon', 'secret-tool', 'dbus-send'] as const;

/** Why the Secret Service tests cannot run here, or `undefined` when they can. */
export function secretServiceMissing(): string | undefined {
  if (process.platform !== 'linux') return 'the Secret Service tests run on Linux only';
  const missing = TOOLS.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return missing.length === 0
    ? undefined
    : `${missing.join(', ')} not installed (Debian: apt-get install gnome-keyring dbus dbus-x11 libsecret-tools)`;
}

/** CI sets LAUNCHER_AUTH_REQUIRE_SERVICES=1: there, a missing service is a failure, not a skip. */
export const servicesRequired = process.env.LAUNCHER_AUTH_REQUIRE_SERVICES === '1';

export interface SecretService {
  /** DBUS_SESSION_BUS_ADDRESS of the private bus. */
  readonly address: string;
  /** An environment for child processes: the private bus, HOME and XDG folders. */
  readonly env: NodeJS.ProcessEnv;
  /** The temporary folder everything lives in. */
  readonly home: string;
  /** Runs a command on the private bus; its exit status and output (which tests must not print when secret). */
  run(command: string, args: string[], input?: string): { status: number | null; stdout: string; stderr: string };
  /** Locks the login keyring (what a screen lock or a logout-less timeout does). */
  lock(): void;
  /** Stops the daemons and removes the folder. */
  stop(): Promise<void>;
}

function firstLine(child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 15 s`)), 15_000);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\n');
      if (end !== -1) {
        clearTimeout(timer);
        resolve(text.slice(0, end).trim());
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}`));
    });
  });
}

async function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, 3_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Starts a session bus and an unlocked gnome-keyring-daemon (password `pw`) on it. */
export async function startSecretService(): Promise<SecretService> {
  const home = await mkdtemp(join(tmpdir(), 'launcher-auth-keyring-'));
  const runtime = join(home, 'run');
  await mkdir(runtime, { mode: 0o700 });
  await chmod(runtime, 0o700);
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_DATA_HOME: join(home, 'data'),
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_CACHE_HOME: join(home, 'cache'),
    XDG_RUNTIME_DIR: runtime,
    // No display: an unlock prompt cannot be shown, so it is dismissed at once instead of waiting for a user.
    DISPLAY: '',
    WAYLAND_DISPLAY: '',
  };
  const children: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const child of children.reverse()) await ended(child);
    await rm(home, { recursive: true, force: true });
  };
  try {
    const bus = spawn(
      'dbus-daemon',
      ['--session', '--nofork', '--print-address=1', `--address=unix:path=${join(runtime, 'bus')}`],
      {
        env: base,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    children.push(bus);
    const address = await firstLine(bus, 'dbus-daemon');
    const env: NodeJS.ProcessEnv = { ...base, DBUS_SESSION_BUS_ADDRESS: address };
    const keyring = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], {
      env,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    children.push(keyring);
    keyring.stdin.end('pw');
    const run: SecretService['run'] = (command, args, input) => {
      const result = spawnSync(command, args, { env, input: input ?? '', encoding: 'utf8', timeout: 15_000 });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    };
    // Ready once it owns its name on the bus; asking before would make the bus start another, locked, daemon.
    for (let attempt = 0; ; attempt++) {
      const owned = run('dbus-send', [
        '--session',
        '--print-reply',
        '--dest=org.freedesktop.DBus',
        '/org/freedesktop/DBus',
        'org.freedesktop.DBus.NameHasOwner',
        'string:org.freedesktop.secrets',
      ]);
      if (owned.stdout.includes('boolean true')) break;
      if (attempt === 150 || keyring.exitCode !== null)
        throw new Error('gnome-keyring-daemon did not take its bus name');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The login collection exists once something was stored: store and clear one item to be sure.
    const probe = run('secret-tool', ['store', '--label=probe', 'launcher-auth-probe', '1'], 'probe');
    if (probe.status !== 0) throw new Error(`secret-tool store failed: ${probe.stderr.trim()}`);
    run('secret-tool', ['clear', 'launcher-auth-probe', '1']);
    return {
      address,
      env,
      home,
      run,
      lock: () => {
        const locked = run('dbus-send', [
          '--session',
          '--print-reply',
          '--dest=org.freedesktop.secrets',
          '/org/freedesktop/secrets',
          'org.freedesktop.Secret.Service.Lock',
          'array:objpath:/org/freedesktop/secrets/collection/login',
        ]);
        if (locked.status !== 0) throw new Error(`locking the keyring failed: ${locked.stderr.trim()}`);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * For a describe block: starts a private Secret Service before its tests and points this process at it
 * (DBUS_SESSION_BUS_ADDRESS, read by the keyring store's helper process), then restores the address and stops it.
 * Throws in beforeAll when the tools are missing (the block is only run then with LAUNCHER_AUTH_REQUIRE_SERVICES=1).
 * Returns the running service, for use inside tests.
 */
export function useSecretService(): () => SecretService {
  let service: SecretService | undefined;
  const saved = process.env.DBUS_SESSION_BUS_ADDRESS;
  beforeAll(async () => {
    const missing = secretServiceMissing();
    if (missing !== undefined) throw new Error(`LAUNCHER_AUTH_REQUIRE_SERVICES=1 but ${missing}`);
    service = await startSecretService();
    process.env.DBUS_SESSION_BUS_ADDRESS = service.address;
  }, 60_000);
  afterAll(async () => {
    if (saved === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
    else process.env.DBUS_SESSION_BUS_ADDRESS = saved;
    await service?.stop();
  });
  return () => {
    if (service === undefined) throw new Error('the Secret Service is not running');
    return service;
  };
}
