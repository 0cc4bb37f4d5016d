// Another page on 127.0.0.1 against the demo owner's session, in Debian's chromium: (F1) it sends a tab of the
// owner to the settings page with a fragment of its choice; (F2) its server, on another port, replaces the owner's
// cookie (cookies ignore ports). Neither may sign the owner out: every tab keeps loading the token.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemo } from '../../examples/demo/main.ts';
import { launchChromium } from './chromium.js';

/** The start of the launcher's masked form of a token (tokenView().masked): twelve dots. */
const MASK = '\u2022'.repeat(12);
/** Attempts of each attack. */
const N = 10;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Whether `page` comes to show the token (masked, loaded from /token): a refusal page may first repair the cookie
 * and load the page again. A page that stays refused is waited for until the deadline only.
 */
async function showsToken(page: Page): Promise<boolean> {
  return page
    .locator('#token', { hasText: MASK })
    .waitFor({ timeout: 10_000 })
    .then(
      () => true,
      () => false,
    );
}

describe('the demo session against another page on 127.0.0.1, in chromium', () => {
  it(`F1, a fragment set by another page, and F2, a cookie replaced from another port: the owner stays in, ${N} of ${N} each`, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'launcher-auth-session-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const demo = await startDemo({ apiPort: 0, settingsPort: 0, dataDir });
    cleanups.push(() => demo.close());
    const { settingsUrl } = demo;
    const cookieName = `launcher_settings_${new URL(settingsUrl).port}`;

    // The other page's server: /f1 sends the tab to the settings page with a fragment; /f2 sets a cookie of the
    // session's name for 127.0.0.1.
    const other: Server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const n = url.searchParams.get('n') ?? '0';
      if (url.pathname === '/f1') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<script>location.href = ${JSON.stringify(`${settingsUrl}/#planted-${n}`)};</script>`);
      } else if (url.pathname !== '/f2') {
        res.writeHead(404).end(); // the favicon
      } else {
        res.writeHead(200, {
          'content-type': 'text/html',
          'set-cookie': `${cookieName}=planted-${n}; HttpOnly; SameSite=Strict; Path=/`,
        });
        res.end('<p>nothing to see</p>');
      }
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => other.close(() => resolve())));
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;

    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const context = await browser.newContext();
    const owner = await context.newPage();
    await owner.goto(pathToFileURL(demo.redirectFile).href);
    expect(await showsToken(owner)).toBe(true);
    const pageKey = await owner.evaluate(() => localStorage.getItem('page-key'));

    let f1Held = 0;
    for (let n = 0; n < N; n++) {
      const tab = await context.newPage();
      await tab.goto(`${otherUrl}/f1?n=${n}`);
      await tab.waitForURL((url) => url.href.startsWith(`${settingsUrl}/`));
      const held =
        (await showsToken(tab)) &&
        (await tab.evaluate(() => localStorage.getItem('page-key'))) === pageKey &&
        (await owner.reload(), await showsToken(owner));
      if (held) f1Held++;
      await tab.close();
    }
    expect(f1Held).toBe(N);

    // With no tab of the settings page open (an open one would repair the cookie at its next call), so that the
    // planted cookie is what the next visit sends.
    await owner.close();
    let f2Planted = 0;
    let f2Held = 0;
    for (let n = 0; n < N; n++) {
      const tab = await context.newPage();
      await tab.goto(`${otherUrl}/f2?n=${n}`);
      // The attack took hold: the owner's cookie is the planted one.
      const jar = await context.cookies(settingsUrl);
      if (jar.length === 1 && jar[0]?.name === cookieName && jar[0].value === `planted-${n}`) f2Planted++;
      await tab.goto(`${settingsUrl}/`);
      if (await showsToken(tab)) f2Held++;
      await tab.close();
    }
    expect(f2Planted).toBe(N);
    expect(f2Held).toBe(N);
  });
});
