// The gate's decision for what a loosely typed framework may hand over (a method or target it left undefined), and
// the exemption that no WebSocket handshake gets. The adapters' shared table (test/adapters/) covers the rest.
import { describe, expect, it, onTestFinished } from 'vitest';
import { MemorySecretStore, TokenAuthority, type RejectInfo } from 'launcher-auth';
import { fetchAuth } from '../../src/adapters/fetch.js';
import { decide, resolveAuthOptions } from '../../src/gate/gate.js';

async function opened(): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  onTestFinished(() => authority.close());
  return authority;
}

describe('decide()', () => {
  it('a method or target left undefined: refused without a throw, onReject told empty strings', async () => {
    const authority = await opened();
    const infos: RejectInfo[] = [];
    const options = resolveAuthOptions({ onReject: (info) => void infos.push(info) }, 'decide');
    const requests = [
      { method: 'GET', target: undefined, authorization: undefined },
      { method: undefined, target: '/health?x=1', authorization: undefined },
    ];
    expect(requests.map((request) => decide(authority, request, options))).toEqual([undefined, undefined]);
    expect(infos).toStrictEqual([
      { method: 'GET', path: '', reason: 'missing', remoteAddress: undefined },
      { method: '', path: '/health', reason: 'missing', remoteAddress: undefined },
    ]);
  });
});

describe('a WebSocket handshake', () => {
  it('to the health path needs the token: the 401, with onReject told why', async () => {
    const authority = await opened();
    const infos: RejectInfo[] = [];
    const guard = fetchAuth(authority, { onReject: (info) => void infos.push(info) });
    const handshake = new Request('http://127.0.0.1/health', { headers: { upgrade: 'websocket' } });
    const result = await guard(handshake);
    expect(result instanceof Response && [result.status, await result.text()]).toEqual([401, '']);
    expect(infos).toStrictEqual([{ method: 'GET', path: '/health', reason: 'missing', remoteAddress: undefined }]);
    // The same request without the Upgrade is the health check.
    expect(await guard(new Request('http://127.0.0.1/health'))).toBeUndefined();
  });
});
