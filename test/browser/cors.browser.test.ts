// The `cors` option as a browser meets it, in Debian's chromium driven by playwright-core: a page served on
// another loopback port calls the API with fetch and the token. From an allowed origin the call succeeds, and
// after a regeneration the page can read the 401 and its challenge; from any other origin the browser blocks the
// call (its preflight is refused) and no handler runs.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { CHALLENGE, HOST_KINDS, startHost } from '../adapters/harness.js';
import { launchChromium } from './chromium.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A page server: its origin is the page's origin. */
function pageServer(): Promise<string> {
  return listen(
    createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>client</title>');
    }),
  );
}

interface Answer {
  status?: number;
  body?: string;
  wwwAuthenticate?: string | null;
  error?: string;
}

/** `fetch(url)` with the token, run by the page itself; a blocked call comes back as the error's name. */
function callFrom(page: Page, url: string, token: string): Promise<Answer> {
  return page.evaluate(
    async ({ url, token }) => {
      try {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, body: await res.text(), wwwAuthenticate: res.headers.get('www-authenticate') };
      } catch (error) {
        return { error: (error as Error).name };
      }
    },
    { url, token },
  );
}

describe.each(HOST_KINDS)('cors in chromium, %s adapter', (kind) => {
  it('an allowed page calls the API with the token and reads the 401 after a regeneration; another page is blocked', async () => {
    const allowedOrigin = await pageServer();
    const otherOrigin = await pageServer();
    const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
    cleanups.push(() => authority.close());
    const refusals: string[] = [];
    const host = await startHost(kind, authority, {
      auth: {
        cors: { origins: [allowedOrigin] },
        onReject: (info) => void refusals.push(`${info.method} ${info.path} ${info.reason}`),
      },
    });
    cleanups.push(() => host.close());
    const api = host.url;
    const runs = (): number => host.counts.protected + host.counts.health;

    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const page = await browser.newPage();

    await page.goto(`${allowedOrigin}/`);
    const old = authority.issue();
    expect(await callFrom(page, `${api}/apps`, old)).toEqual({ status: 200, body: 'apps', wwwAuthenticate: null });
    expect(runs()).toBe(1);

    await authority.rotate();
    // The page can read the refusal and its challenge: time to ask the user for the new token.
    expect(await callFrom(page, `${api}/apps`, old)).toEqual({ status: 401, body: '', wwwAuthenticate: CHALLENGE });
    expect(await callFrom(page, `${api}/apps`, authority.issue())).toEqual({
      status: 200,
      body: 'apps',
      wwwAuthenticate: null,
    });
    expect(runs()).toBe(2);
    expect(refusals).toEqual(['GET /apps rotated']);

    await page.goto(`${otherOrigin}/`);
    expect(await callFrom(page, `${api}/apps`, authority.issue())).toEqual({ error: 'TypeError' });
    expect(runs()).toBe(2);
    // The browser sent the preflight, which was refused; the request itself never left the browser.
    expect(refusals).toEqual(['GET /apps rotated', 'OPTIONS /apps missing']);
  });
});
