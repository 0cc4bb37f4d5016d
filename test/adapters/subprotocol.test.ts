// withUpgradeAuth's `subprotocolToken` over real sockets, with the ws package as the host's WebSocket server and
// client: the token entry authenticates as the header does, is refused in the same bytes otherwise, and never
// reaches the host (its rawHeaders, its headers, ws's handleProtocols) nor the answer.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { RejectInfo, TokenAuthority } from 'launcher-auth';
import { withUpgradeAuth } from '../../src/adapters/node.js';
import { TOKEN_PROTOCOL_PREFIX, protocolCredentials } from '../../src/gate/subprotocol.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { rawRequest } from './harness.js';

const REFUSAL =
  'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="launcher"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

const entry = (token: string): string => `${TOKEN_PROTOCOL_PREFIX}${token}`;
/** What the host saw, with any token entry masked: a failing assertion must not print a token. */
const redact = (value: string): string => value.replace(/authorization\.bearer\.[^,\s]*/gi, '<token entry>');

function upgrade(extra: string): string {
  return (
    'GET /socket HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`
  );
}

interface Seen {
  /** Handler runs. */
  runs: number;
  /** What ws's handleProtocols was offered, per run. */
  offered: string[][];
  /** Every header value of the request the handler got, per run. */
  rawValues: string[][];
  headerProtocol: Array<string | undefined>;
  /** Per run: the values of the `Sec-WebSocket-Protocol` lines of `rawHeaders`, of `headersDistinct`, and whether `headers` has the name. */
  rawProtocols: string[][];
  distinctProtocols: Array<string[] | undefined>;
  protocolNamed: boolean[];
  rejects: RejectInfo[];
}

interface Started {
  url: string;
  port: number;
  seen: Seen;
  close(): Promise<void>;
}

async function start(authority: TokenAuthority, subprotocolToken: boolean | undefined): Promise<Started> {
  const seen: Seen = {
    runs: 0,
    offered: [],
    rawValues: [],
    headerProtocol: [],
    rawProtocols: [],
    distinctProtocols: [],
    protocolNamed: [],
    rejects: [],
  };
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols: Set<string>) => {
      seen.offered.push([...protocols].map(redact));
      return protocols.has('launcher.v1') ? 'launcher.v1' : false;
    },
  });
  const server: Server = createServer((_req, res) => res.writeHead(404).end());
  const options = {
    onReject: (info: RejectInfo) => void seen.rejects.push(info),
    ...(subprotocolToken === undefined ? {} : { subprotocolToken }),
  };
  server.on(
    'upgrade',
    withUpgradeAuth(
      authority,
      (req, socket, head) => {
        seen.runs++;
        seen.rawValues.push(req.rawHeaders.filter((_, i) => i % 2 === 1));
        const value = (req as IncomingMessage).headers['sec-websocket-protocol'];
        seen.headerProtocol.push(value === undefined ? undefined : redact(value));
        seen.rawProtocols.push(
          req.rawHeaders.flatMap((name, i) =>
            name.toLowerCase() === 'sec-websocket-protocol' ? [redact(req.rawHeaders[i + 1] ?? '')] : [],
          ),
        );
        seen.distinctProtocols.push(req.headersDistinct['sec-websocket-protocol']?.map(redact));
        seen.protocolNamed.push(Object.hasOwn(req.headers, 'sec-websocket-protocol'));
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.send(`hello ${req.auth.keyId}`);
          req.auth.signal.addEventListener('abort', () => ws.close(1008, 'token regenerated'), { once: true });
        });
      },
      options,
    ),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/socket`,
    port,
    seen,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Opened {
  ws: WebSocket;
  protocol: string;
  first: string;
}

function open(url: string, protocols: string[]): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    ws.once('message', (data) => resolve({ ws, protocol: ws.protocol, first: (data as Buffer).toString() }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function closed(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}

describe('withUpgradeAuth with subprotocolToken: true', () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let host: Started;
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    host = await start(authority, true);
  });
  afterAll(async () => {
    await host?.close();
    await authority?.close();
  });

  it('a ws client with the token entry opens, gets the host protocol, and the entry reaches nothing of the host', async () => {
    const before = host.seen.runs;
    const { ws, protocol, first } = await open(host.url, ['launcher.v1', entry(tokens.current)]);
    expect(redact(protocol)).toBe('launcher.v1');
    expect(first).toBe(`hello ${authority.keyId}`);
    expect(host.seen.runs).toBe(before + 1);
    expect(host.seen.offered.at(-1)).toEqual(['launcher.v1']);
    expect(host.seen.headerProtocol.at(-1)).toBe('launcher.v1');
    const values = host.seen.rawValues.at(-1) ?? [];
    expect(values.some((value) => value.includes(tokens.current))).toBe(false);
    expect(values.some((value) => value.toLowerCase().includes(TOKEN_PROTOCOL_PREFIX))).toBe(false);
    ws.close();
  });

  it('the entry in any letter case is read and removed; with no other entry the header goes away', async () => {
    const before = host.seen.runs;
    const res = await rawRequest(
      host.port,
      upgrade(`Sec-WebSocket-Protocol: Authorization.Bearer.${tokens.current}\r\n`),
    );
    expect(res.status).toBe(101);
    expect(res.headers['sec-websocket-protocol'] === undefined).toBe(true);
    expect(host.seen.runs).toBe(before + 1);
    expect(host.seen.headerProtocol.at(-1)).toBeUndefined();
    expect([host.seen.protocolNamed.at(-1), host.seen.distinctProtocols.at(-1), host.seen.rawProtocols.at(-1)]).toEqual(
      [false, undefined, []],
    );
    expect((host.seen.rawValues.at(-1) ?? []).some((value) => value.includes(tokens.current))).toBe(false);
  });

  it('an open socket is closed when the token is regenerated, and its entry is refused afterwards', async () => {
    const { authority: own, tokens: ownTokens } = await openCaseAuthority();
    const other = await start(own, true);
    try {
      const { ws } = await open(other.url, ['launcher.v1', entry(ownTokens.current)]);
      const code = closed(ws);
      await own.rotate();
      expect(await code).toBe(1008);
      const runs = other.seen.runs;
      const res = await rawRequest(
        other.port,
        upgrade(`Sec-WebSocket-Protocol: launcher.v1, ${entry(ownTokens.current)}\r\n`),
        { untilClose: true },
      );
      expect(res.raw.toString('latin1')).toBe(REFUSAL);
      expect(other.seen.runs).toBe(runs);
      expect(other.seen.rejects.map((info) => info.reason)).toEqual(['rotated']);
    } finally {
      await other.close();
      await own.close();
    }
  });

  const refusals: Array<{ name: string; headers: (t: Tokens) => string; reason: RejectInfo['reason'] }> = [
    { name: 'no entry and no header', headers: () => 'Sec-WebSocket-Protocol: launcher.v1\r\n', reason: 'missing' },
    {
      name: 'an old token after a rotation',
      headers: (t) => `Sec-WebSocket-Protocol: launcher.v1, ${entry(t.previous)}\r\n`,
      reason: 'rotated',
    },
    {
      name: 'a forged token',
      headers: (t) => `Sec-WebSocket-Protocol: launcher.v1, ${entry(t.wrongKey)}\r\n`,
      reason: 'invalid',
    },
    {
      name: 'alg none (no signature)',
      headers: (t) => `Sec-WebSocket-Protocol: ${entry(t.algNone)}, launcher.v1\r\n`,
      reason: 'malformed',
    },
    {
      name: 'an empty entry',
      headers: () => `Sec-WebSocket-Protocol: launcher.v1, ${TOKEN_PROTOCOL_PREFIX}\r\n`,
      reason: 'malformed',
    },
    {
      name: 'a space between the prefix and the current token',
      headers: (t) => `Sec-WebSocket-Protocol: launcher.v1, ${TOKEN_PROTOCOL_PREFIX} ${t.current}\r\n`,
      reason: 'malformed',
    },
    {
      name: 'two Authorization headers and a current entry',
      headers: (t) =>
        `Authorization: Bearer x\r\nAuthorization: Bearer y\r\nSec-WebSocket-Protocol: ${entry(t.current)}\r\n`,
      reason: 'malformed',
    },
    {
      name: 'the header and the entry together (both current: ambiguous)',
      headers: (t) =>
        `Authorization: Bearer ${t.current}\r\nSec-WebSocket-Protocol: launcher.v1, ${entry(t.current)}\r\n`,
      reason: 'malformed',
    },
    {
      name: 'two entries in one line (both current)',
      headers: (t) => `Sec-WebSocket-Protocol: ${entry(t.current)}, launcher.v1, ${entry(t.current)}\r\n`,
      reason: 'malformed',
    },
    {
      name: 'two entries on two header lines (a current and an old one)',
      headers: (t) =>
        `Sec-WebSocket-Protocol: launcher.v1, ${entry(t.current)}\r\nSec-WebSocket-Protocol: ${entry(t.previous)}\r\n`,
      reason: 'malformed',
    },
  ];

  it.each(refusals)('$name: the exact raw 401, the handler never ran, onReject says $reason', async (c) => {
    const runs = host.seen.runs;
    const rejects = host.seen.rejects.length;
    const res = await rawRequest(host.port, upgrade(c.headers(tokens)), { untilClose: true });
    expect(res.raw.toString('latin1')).toBe(REFUSAL);
    expect(res.closed).toBe(true);
    expect(host.seen.runs).toBe(runs);
    expect(host.seen.rejects.slice(rejects).map((info) => info.reason)).toEqual([c.reason]);
  });

  // Every token of the hostile table, once in the header and once in the entry: the same answer, the same reason.
  it.each(['previous', 'wrongKey', 'tamperedPayload', 'algNone', 'algNoneSigned', 'hs512', 'big', 'resigned'] as const)(
    '%s: the entry gets what the header gets',
    async (name) => {
      const token = tokens[name];
      const outcomes: Array<{ status: number; reason: RejectInfo['reason'] | undefined }> = [];
      for (const carrier of [
        `Authorization: Bearer ${token}\r\nSec-WebSocket-Protocol: launcher.v1\r\n`,
        `Sec-WebSocket-Protocol: launcher.v1, ${entry(token)}\r\n`,
      ]) {
        const rejects = host.seen.rejects.length;
        // A valid token opens the socket, which stays open: read only its answer.
        const res = await rawRequest(host.port, upgrade(carrier), { untilClose: name !== 'resigned' });
        if (res.status === 401) expect(res.raw.toString('latin1')).toBe(REFUSAL);
        outcomes.push({ status: res.status, reason: host.seen.rejects[rejects]?.reason });
      }
      expect(outcomes[1]).toEqual(outcomes[0]);
      expect(outcomes[0]?.status).toBe(name === 'resigned' ? 101 : 401);
    },
  );

  it('the entry among several protocol lines and empty items: the host gets the others, in order, on one line', async () => {
    const before = host.seen.runs;
    const res = await rawRequest(
      host.port,
      upgrade(
        `Sec-WebSocket-Protocol: launcher.v1,, other\r\nX-Between: 1\r\n` +
          `Sec-WebSocket-Protocol: ${entry(tokens.current)}, third,\r\nSec-WebSocket-Protocol: fourth\r\n`,
      ),
    );
    expect(res.status).toBe(101);
    expect(host.seen.runs).toBe(before + 1);
    const line = 'launcher.v1, other, third, fourth';
    expect(host.seen.rawProtocols.at(-1)).toEqual([line]);
    expect(host.seen.headerProtocol.at(-1)).toBe(line);
    expect(host.seen.distinctProtocols.at(-1)).toEqual([line]);
    expect(host.seen.rawValues.at(-1)).toContain('1');
  });

  it('the Authorization header alone still works beside ordinary protocols', async () => {
    const before = host.seen.runs;
    const res = await rawRequest(
      host.port,
      upgrade(`Authorization: Bearer ${tokens.current}\r\nSec-WebSocket-Protocol: launcher.v1\r\n`),
    );
    expect(res.status).toBe(101);
    expect(redact(res.headers['sec-websocket-protocol'] ?? '')).toBe('launcher.v1');
    expect(host.seen.runs).toBe(before + 1);
  });

  it('the header alone, with no protocol header or beside a protocol as long as the entry prefix: 101, nothing taken', async () => {
    const before = host.seen.runs;
    const header = `Authorization: Bearer ${tokens.current}\r\n`;
    const bare = await rawRequest(host.port, upgrade(header));
    expect(bare.status).toBe(101);
    const long = 'launcher-automation-1';
    expect(long.length).toBe(TOKEN_PROTOCOL_PREFIX.length);
    const res = await rawRequest(host.port, upgrade(`${header}Sec-WebSocket-Protocol: launcher.v1, ${long}\r\n`));
    expect(res.status).toBe(101);
    expect(host.seen.runs).toBe(before + 2);
    expect(host.seen.offered.at(-1)).toEqual(['launcher.v1', long]);
  });
});

describe('withUpgradeAuth without subprotocolToken', () => {
  it('ignores the entry (off by default): no header means the 401, and a bad option value is a TypeError', async () => {
    const { authority, tokens } = await openCaseAuthority();
    const host = await start(authority, undefined);
    try {
      const res = await rawRequest(
        host.port,
        upgrade(`Sec-WebSocket-Protocol: launcher.v1, ${entry(tokens.current)}\r\n`),
        { untilClose: true },
      );
      expect(res.raw.toString('latin1')).toBe(REFUSAL);
      expect(host.seen.runs).toBe(0);
      expect(host.seen.rejects.map((info) => info.reason)).toEqual(['missing']);
      expect(() =>
        withUpgradeAuth(authority, () => undefined, { subprotocolToken: 'yes' as unknown as boolean }),
      ).toThrow(new TypeError('withUpgradeAuth: `subprotocolToken` must be a boolean when set.'));
    } finally {
      await host.close();
      await authority.close();
    }
  });
});

describe('protocolCredentials', () => {
  const HANDSHAKE = { method: 'GET', connection: 'Upgrade', upgrade: 'websocket' } as const;

  it('reads one entry, keeps the others in order, and refuses ambiguity', () => {
    expect(protocolCredentials(HANDSHAKE, undefined, 'a, authorization.bearer.x.y.z , b')).toEqual({
      authorization: 'Bearer x.y.z',
      protocols: ['a', 'b'],
    });
    expect(protocolCredentials(HANDSHAKE, 'Bearer q', ['a', 'b'])).toEqual({
      authorization: 'Bearer q',
      protocols: undefined,
    });
    expect(protocolCredentials(HANDSHAKE, undefined, undefined)).toEqual({
      authorization: undefined,
      protocols: undefined,
    });
    expect(protocolCredentials(HANDSHAKE, [], 'authorization.bearer.t')).toEqual({
      authorization: 'Bearer t',
      protocols: [],
    });
    expect(protocolCredentials(HANDSHAKE, 'Bearer q', 'authorization.bearer.t').authorization).toEqual(['', '']);
    expect(
      protocolCredentials(HANDSHAKE, undefined, ['authorization.bearer.t', 'AUTHORIZATION.BEARER.t']).authorization,
    ).toEqual(['', '']);
    expect(protocolCredentials(HANDSHAKE, undefined, 'authorization.bearer.').authorization).toBe('');
    expect(protocolCredentials(HANDSHAKE, undefined, 'authorization.bearer.a"b').authorization).toBe('');
  });

  it('counts the entry for a WebSocket handshake only: GET, Connection naming upgrade, Upgrade naming websocket', () => {
    const entryOnly = 'launcher.v1, authorization.bearer.t';
    const counted = { authorization: 'Bearer t', protocols: ['launcher.v1'] };
    const ignored = { authorization: undefined, protocols: undefined };
    expect(protocolCredentials(HANDSHAKE, undefined, entryOnly)).toEqual(counted);
    expect(
      protocolCredentials(
        { method: 'GET', connection: ['keep-alive, Upgrade'], upgrade: ['h2c', 'WebSocket/13'] },
        undefined,
        entryOnly,
      ),
    ).toEqual(counted);
    for (const parts of [
      { method: 'GET', connection: undefined, upgrade: 'websocket' },
      { method: 'GET', connection: null, upgrade: 'websocket' },
      { method: 'GET', connection: 'keep-alive', upgrade: 'websocket' },
      { method: 'POST', connection: 'Upgrade', upgrade: 'websocket' },
      { method: 'get', connection: 'Upgrade', upgrade: 'websocket' },
      { method: undefined, connection: 'Upgrade', upgrade: 'websocket' },
      { method: 'GET', connection: 'Upgrade', upgrade: 'h2c' },
      { method: 'GET', connection: 'Upgrade', upgrade: undefined },
      { method: 'GET', connection: 'upgraded', upgrade: 'websocket' },
    ]) {
      expect({ parts, result: protocolCredentials(parts, undefined, entryOnly) }).toEqual({ parts, result: ignored });
    }
  });

  it('a value that is not a string (a loosely typed request) names nothing and holds no entry, never a throw', () => {
    const odd = [5, null, { toString: () => 'authorization.bearer.t' }] as unknown as string[];
    const parts = { method: 'GET', connection: 'Upgrade', upgrade: [...odd, 'websocket'] };
    expect(protocolCredentials(parts, undefined, [...odd, 'authorization.bearer.t', 'chat'])).toEqual({
      authorization: 'Bearer t',
      protocols: ['chat'],
    });
    expect(protocolCredentials({ ...parts, upgrade: odd }, 'Bearer q', 'authorization.bearer.t')).toEqual({
      authorization: 'Bearer q',
      protocols: undefined,
    });
  });
});

describe('withUpgradeAuth with subprotocolToken: an upgrade that is not a WebSocket handshake', () => {
  it('a POST upgrade to websocket, or an upgrade to another accepted protocol, is judged by its header alone', async () => {
    const { authority, tokens } = await openCaseAuthority();
    const seen = { runs: 0, rejects: [] as RejectInfo[] };
    const server: Server = createServer((_req, res) => res.writeHead(404).end());
    server.on(
      'upgrade',
      withUpgradeAuth(
        authority,
        (_req, socket) => {
          seen.runs++;
          socket.end('HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        },
        {
          subprotocolToken: true,
          protocols: ['websocket', 'launcher-stream'],
          onReject: (info) => void seen.rejects.push(info),
        },
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      for (const text of [
        upgrade(`Sec-WebSocket-Protocol: launcher.v1, ${entry(tokens.current)}\r\n`)
          .replace(/^GET /, 'POST ')
          .replace('\r\n\r\n', '\r\nContent-Length: 0\r\n\r\n'),
        upgrade(`Sec-WebSocket-Protocol: launcher.v1, ${entry(tokens.current)}\r\n`).replace(
          'Upgrade: websocket',
          'Upgrade: launcher-stream',
        ),
      ]) {
        const res = await rawRequest(port, text, { untilClose: true });
        expect(res.raw.toString('latin1')).toBe(REFUSAL);
      }
      expect(seen.runs).toBe(0);
      expect(seen.rejects.map((info) => info.reason)).toEqual(['missing', 'missing']);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await authority.close();
    }
  });
});
