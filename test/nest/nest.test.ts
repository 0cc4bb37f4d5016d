// The NestJS recipe (examples/nest) on real Nest servers, on the Express and the Fastify platform: the shared table
// of cases with exact refusals, controllers that get the AuthContext through @Auth(), and rotation at once.
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { createApp, Launcher, type Platform } from '../../examples/nest/app.ts';
import { CASES, expectationFor, openCaseAuthority, requestText, type Tokens } from '../adapters/cases.js';
import { expectRefusal, rawRequest, sendFramed } from '../adapters/harness.js';

const get = (target: string, token?: string): string =>
  `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${token === undefined ? '' : `Authorization: Bearer ${token}\r\n`}\r\n`;

/** Which adapter's expectations each platform shares (the platform answers 400s and 404s as it does). */
const KIND = { express: 'express5', fastify: 'fastify' } as const;

describe.each(['express', 'fastify'] as const)('NestJS on the %s platform', (platform: Platform) => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let app: INestApplication;
  let port: number;
  const launcher = new Launcher();

  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    app = await createApp(platform, authority, launcher);
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(async () => {
    app.getHttpServer().closeAllConnections();
    await app?.close();
    await authority?.close();
  });

  describe('the seed cases', () => {
    it('no Authorization header: 401, empty body, the challenge; the controller did not run', async () => {
      const before = launcher.served;
      expectRefusal(await sendFramed(port, get('/apps')));
      expect(launcher.served).toBe(before);
    });

    it('an invalid token: the same 401', async () => {
      const before = launcher.served;
      expectRefusal(await sendFramed(port, get('/apps', 'not.a.token')));
      expect(launcher.served).toBe(before);
    });

    it('the token before the latest rotate(): the same 401', async () => {
      const before = launcher.served;
      expectRefusal(await sendFramed(port, get('/apps', tokens.previous)));
      expect(launcher.served).toBe(before);
    });

    it('the token from a rotate() is accepted at once, and @Auth() hands the controller its context', async () => {
      const fresh = await authority.rotate();
      const before = launcher.served;
      const res = await sendFramed(port, get('/apps', fresh));
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body.toString('utf8'))).toEqual({ running: launcher.running, keyId: authority.keyId });
      expect(launcher.served).toBe(before + 1);
      tokens = { ...tokens, current: fresh };
    });

    it('GET /health without a token is not refused', async () => {
      const res = await sendFramed(port, get('/health'));
      expect(res.status).toBe(200);
      expect(res.body.toString('latin1')).toBe('ok');
    });
  });

  it('every case of the shared table: exact refusals, no controller run on a refusal', async () => {
    // The seed cases rotated the authority: `current` is its token now, and the re-signed token of the old key is
    // an old token now (refused, as the seed cases show), so that one case is left out.
    const table = CASES.filter((c) => !c.name.startsWith('HS256 with the right key and other claims'));
    for (const c of table) {
      const want = expectationFor(c, KIND[platform]);
      const text = requestText(c, { ...tokens, current: authority.issue() }, port);
      const before = launcher.served;
      const res =
        typeof want === 'object' || c.framed === false ? await rawRequest(port, text) : await sendFramed(port, text);
      const label = { case: c.name, status: res.status };
      if (want === 401) {
        expect(label).toEqual({ case: c.name, status: 401 });
        expectRefusal(res);
        expect(launcher.served).toBe(before);
      } else if (want === 'protected') {
        expect(label).toEqual({ case: c.name, status: text.startsWith('POST') ? 202 : 200 });
        expect(launcher.served).toBe(before + 1);
      } else if (want === 'health') {
        expect(label).toEqual({ case: c.name, status: 200 });
        expect(launcher.served).toBe(before);
      } else {
        expect(label).toEqual({ case: c.name, status: want.status });
        expect(launcher.served).toBe(before);
      }
    }
  });

  it('POST /apps/:name/launch with the token reaches the controller with its context', async () => {
    const res = await sendFramed(
      port,
      `POST /apps/editor/launch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${authority.issue()}\r\nContent-Length: 0\r\n\r\n`,
    );
    expect(res.status).toBe(202);
    expect(JSON.parse(res.body.toString('utf8'))).toEqual({ launched: 'editor', keyId: authority.keyId });
  });
});
