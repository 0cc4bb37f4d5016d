// Instance processes for the multi-process tests: each runs fixtures/instance.ts through tsx and is driven by
// lines on stdin and stdout; and the requests the tests send them.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { MemorySecretStore, TokenAuthority, type SecretRecord } from 'launcher-auth';
import { killGroup, spawnOwned } from '../../../test/support/children.js';
import { deadline } from '../../../test/support/poll.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const INSTANCE = fileURLToPath(new URL('./fixtures/instance.ts', import.meta.url));

export interface Instance {
  readonly process: ChildProcessWithoutNullStreams;
  readonly port: number;
  /** The next unread line starting with one of `prefixes`, waiting up to `timeout` ms. */
  next(prefixes: string[], timeout?: number): Promise<string>;
  send(line: string): void;
  /** Kills it (SIGKILL, whether or not it is stopped) and waits for the exit. */
  kill(): Promise<void>;
}

/** Starts an instance and waits for its "ready" line; it dies with this process (see children.ts), even frozen. */
export async function startInstance(url: string, key: string, leaseMs: number): Promise<Instance> {
  const child = spawnOwned(process.execPath, ['--import', 'tsx', INSTANCE, url, key, String(leaseMs)], {
    cwd: REPO,
    stdio: 'pipe',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  let wake: (() => void) | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    wake?.();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.once('exit', () => wake?.());
  /** The next line with one of `prefixes`, woken by each line and by the exit; fails at the exit or a deadline. */
  const next = async (prefixes: string[], timeout = 20_000): Promise<string> => {
    let expired = false;
    const cancel = deadline(timeout, () => {
      expired = true;
      wake?.();
    });
    try {
      for (;;) {
        const index = lines.findIndex((line) => prefixes.some((prefix) => line.startsWith(prefix)));
        if (index !== -1) return lines.splice(0, index + 1).pop() as string;
        if (child.exitCode !== null || child.signalCode !== null || expired) {
          throw new Error(
            `instance gave no "${prefixes.join('|')}" line (exit ${child.exitCode ?? child.signalCode}): ${stderr.slice(-800)}`,
          );
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      cancel();
    }
  };
  const ready = await next(['ready']).catch((error: unknown) => {
    killGroup(child);
    throw error;
  });
  const port = Number(ready.split(' ')[1]);
  return {
    process: child,
    port,
    next,
    send: (line) => child.stdin.write(`${line}\n`),
    async kill() {
      killGroup(child);
      await exited;
    },
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/** The status of GET / with `token`; 0 when the connection failed. */
export function statusWith(port: number, token: string): Promise<number> {
  return new Promise((resolve) => {
    const outgoing = request(
      { host: '127.0.0.1', port, path: '/', agent, headers: { authorization: `Bearer ${token}` } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    outgoing.on('error', () => resolve(0));
    outgoing.end();
  });
}

/** The token an authority on `record` issues: the same string on every instance holding that record. */
export async function tokenOf(record: SecretRecord): Promise<string> {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore(record) });
  const token = authority.issue();
  await authority.close();
  return token;
}
