// The hostile-input corpus (corpus.ts) through every adapter over real loopback sockets: the exact outcome of
// each case; a trap listener that jku/x5u/jwk headers name sees no connection; nothing pollutes Object.prototype.
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { openCaseAuthority, type Tokens } from '../adapters/cases.js';
import { HOST_KINDS, checkCase, startHost, type Host } from '../adapters/harness.js';
import { CORPUS, CORPUS_CLASSES, asAdapterCase, corpusCounts, type Kit } from './corpus.js';

const PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype).sort();
const POLLUTABLE = [
  'alg',
  'crit',
  'b64',
  'kid',
  'jku',
  'jwk',
  'x5u',
  'x5c',
  'typ',
  'exp',
  'nbf',
  'iat',
  'isAdmin',
  'prototype',
];

let trap: Server;
let trapConnections = 0;

beforeAll(async () => {
  trap = createServer((socket) => {
    trapConnections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  await new Promise<void>((resolve) => trap.close(() => resolve()));
});

describe('the corpus itself', () => {
  it('has at least 80 cases, each named once, with a source and a known class', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(80);
    expect(new Set(CORPUS.map((c) => c.name)).size).toBe(CORPUS.length);
    for (const c of CORPUS) {
      expect(c.source.trim(), c.name).not.toBe('');
      expect(CORPUS_CLASSES, c.name).toContain(c.class);
      // A case that does not expect the uniform refusal says why.
      if (c.expect !== 401 || c.per !== undefined) expect(c.why?.trim(), c.name).toBeTruthy();
    }
    for (const [name, count] of corpusCounts()) expect(count, name).toBeGreaterThanOrEqual(5);
  });
});

describe.each(HOST_KINDS)('%s adapter', (kind) => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let host: Host;
  let kit: Kit;
  beforeAll(async () => {
    const opened = await openCaseAuthority();
    ({ authority, tokens } = opened);
    const record = await opened.store.load();
    if (record === undefined) throw new Error('the case authority has no record');
    const payload = tokens.current.split('.')[1] ?? '';
    kit = {
      tokens,
      key: record.key,
      kid: record.id,
      claims: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>,
      trap: `http://127.0.0.1:${(trap.address() as AddressInfo).port}/`,
    };
    // With withUpgradeAuth and withContinueAuth on the server, as a host with WebSockets and uploads wires it.
    host = await startHost(kind, authority, { upgrade: true, continue: true });
  });
  afterAll(async () => {
    await host?.close();
    await authority?.close();
  });

  it.each(CORPUS)('[$class] $name', async (c) => {
    await checkCase(host, authority, tokens, asAdapterCase(c, kit));
  });
});

describe('after the whole corpus', () => {
  it('no header named a URL that was fetched: the trap listener saw no connection', () => {
    expect(trapConnections).toBe(0);
  });

  it('Object.prototype gained nothing', () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTOTYPE_KEYS);
    const probe: Record<string, unknown> = {};
    for (const key of POLLUTABLE) expect(probe[key], key).toBeUndefined();
  });
});
