// The server of bench/token-size.ts: node:http with withAuth() and the given `maxTokenLength`, pinned to one core by
// its parent. `--secret <file> --max <n> --lifetime <s>`; prints `READY <port>` once listening on 127.0.0.1.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemorySecretStore, TokenAuthority } from '../src/index.js';
import { withAuth } from '../src/adapters/node.js';
import { exitWithParent, plainStackTraces, requireFlag } from './common.js';

exitWithParent();
plainStackTraces();
const argv = process.argv.slice(2);
setTimeout(() => process.exit(3), Number(requireFlag(argv, '--lifetime')) * 1000).unref();

const saved = JSON.parse(await readFile(requireFlag(argv, '--secret'), 'utf8')) as { id: string; key: string };
const store = new MemorySecretStore({
  id: saved.id,
  key: new Uint8Array(Buffer.from(saved.key, 'base64url')),
  createdAt: new Date(0),
});
const authority = await TokenAuthority.open({ store, maxTokenLength: Number(requireFlag(argv, '--max')) });
const server = createServer(withAuth(authority, (_req, res) => res.end('ok'), { healthPath: false }));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`);
});
