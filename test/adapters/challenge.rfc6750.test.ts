// RFC 6750 §3: the challenge of every 401 is `Bearer` followed by an auth-param (`realm`), on every adapter and on
// the raw refusal of an upgrade, and parsers that nobody here wrote read it: npm's auth-header and
// www-authenticate, and Python's requests (Debian's python3-requests, run by /usr/bin/python3).
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import authHeader from 'auth-header';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { openCaseAuthority } from './cases.js';
import { CHALLENGE, HOST_KINDS, expectRefusal, rawRequest, startHost, type Host, type HostKind } from './harness.js';

interface WwwAuthenticate {
  scheme: string;
  parms: Record<string, string>;
  err?: string;
}
const { parsers } = createRequire(import.meta.url)('www-authenticate') as {
  parsers: { WWW_Authenticate: new (value: string) => WwwAuthenticate };
};

const PYTHON = '/usr/bin/python3';
/** Fetches each URL with requests and prints, per URL, the status and the challenge's scheme and params. */
const PYTHON_CLIENT = `
import json, sys
import requests
from requests.utils import parse_dict_header
out = []
for url in sys.argv[1:]:
    r = requests.get(url, timeout=10)
    scheme, _, params = r.headers['WWW-Authenticate'].partition(' ')
    out.append({'status': r.status_code, 'body': r.text, 'scheme': scheme, 'params': parse_dict_header(params)})
print(json.dumps(out))
`;

function pythonHasRequests(): boolean {
  if (!existsSync(PYTHON)) return false;
  return spawnSync(PYTHON, ['-c', 'import requests'], { stdio: 'ignore' }).status === 0;
}
const required = process.env['LAUNCHER_AUTH_REQUIRE_SERVICES'] === '1';
const havePython = pythonHasRequests();

const get = (target: string): string => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
const upgrade =
  'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
  'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';

function expectParsed(value: string | undefined, realm: string): void {
  expect(value).toBe(`Bearer realm="${realm}"`);
  expect(authHeader.parse(value as string)).toEqual({ scheme: 'Bearer', params: { realm }, token: null });
  const parsed = new parsers.WWW_Authenticate(value as string);
  expect(parsed.err).toBeUndefined();
  expect(parsed.scheme).toBe('Bearer');
  expect(parsed.parms).toEqual({ realm });
}

describe('the bare challenge the parsers refuse (why the realm is there)', () => {
  it('auth-header throws and www-authenticate fails on `Bearer` alone', () => {
    expect(() => authHeader.parse('Bearer')).toThrow();
    expect(() => new parsers.WWW_Authenticate('Bearer')).toThrow();
  });
});

const hosts: Array<{ kind: HostKind; realm: string; host: Host }> = [];
let authority: TokenAuthority;

beforeAll(async () => {
  ({ authority } = await openCaseAuthority());
  for (const kind of HOST_KINDS) {
    hosts.push({ kind, realm: 'launcher', host: await startHost(kind, authority, { upgrade: true }) });
    hosts.push({
      kind,
      realm: 'Launcher API 2',
      host: await startHost(kind, authority, { upgrade: true, auth: { realm: 'Launcher API 2' } }),
    });
  }
});

afterAll(async () => {
  for (const { host } of hosts) await host.close();
  await authority?.close();
});

describe.each(HOST_KINDS)('%s adapter', (kind) => {
  it('every 401 and the raw upgrade refusal carry the realm, and both npm parsers read it', async () => {
    for (const { realm, host } of hosts.filter((h) => h.kind === kind)) {
      for (const text of [
        get('/apps'),
        get('/nope'),
        `POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n`,
      ]) {
        const res = await rawRequest(host.port, text);
        if (realm === 'launcher') expectRefusal(res);
        expectParsed(res.headers['www-authenticate'], realm);
      }
      const refused = await rawRequest(host.port, upgrade, { untilClose: true });
      expect(refused.status).toBe(401);
      expectParsed(refused.headers['www-authenticate'], realm);
    }
    expect(CHALLENGE).toBe('Bearer realm="launcher"');
  });
});

describe("Python's requests", () => {
  it.skipIf(!havePython && !required)(
    'reads the challenge of a real 401 from every adapter (needs /usr/bin/python3 with requests: apt install python3-requests)',
    async () => {
      expect(
        havePython,
        'python3-requests is required (LAUNCHER_AUTH_REQUIRE_SERVICES=1): apt install python3-requests',
      ).toBe(true);
      const urls = hosts.map(({ host }) => `${host.url}/apps`);
      // Asynchronous: the servers answer from this very process.
      const { stdout } = await promisify(execFile)(PYTHON, ['-c', PYTHON_CLIENT, ...urls], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      const results = JSON.parse(stdout) as Array<{
        status: number;
        body: string;
        scheme: string;
        params: Record<string, string>;
      }>;
      expect(results).toEqual(
        hosts.map(({ realm }) => ({ status: 401, body: '', scheme: 'Bearer', params: { realm } })),
      );
    },
  );
});
