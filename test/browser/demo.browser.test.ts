// The demo's settings page as its owner meets it, in Debian's chromium driven by playwright-core: open it with the
// launch link, read the token, use it, regenerate it through the confirmation dialog, and see the old token and its
// event stream cut off.
//
// The screenshots go to the system's temporary folder, so that a run leaves the clone unmodified. To update the
// README's picture on purpose: LAUNCHER_AUTH_SCREENSHOT=docs/settings.png npm run test:browser
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSecretStore, LauncherAuthError } from 'launcher-auth';
import { PortInUseError, startDemo, type Demo } from '../../examples/demo/main.ts';
import { launchChromium } from './chromium.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The settings page as the README shows it: written into the tree only when asked (a path, relative to the clone's root or absolute). */
const SCREENSHOT = process.env['LAUNCHER_AUTH_SCREENSHOT']
  ? resolvePath(ROOT, process.env['LAUNCHER_AUTH_SCREENSHOT'])
  : join(tmpdir(), 'launcher-auth-settings.png');
/** Not part of the docs: the page in a phone-sized window and the refusal page, for a person to look at. */
const NARROW_SCREENSHOT = join(tmpdir(), 'launcher-auth-settings-narrow.png');
const REFUSED_SCREENSHOT = join(tmpdir(), 'launcher-auth-settings-refused.png');
const REFUSAL_TITLE = 'Open the settings from the launcher';
/** The launcher's masked form of a token (tokenView().masked): twelve dots and its last 4 characters. */
const masked = (token: string): string => `${'\u2022'.repeat(12)}${token.slice(-4)}`;

const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * The demo on its default ports when they are free, so that the screenshot shows the address the README gives;
 * on any free ports otherwise.
 */
async function startOnDefaultPorts(dataDir: string): Promise<Demo> {
  try {
    return await startDemo({ dataDir });
  } catch (error) {
    if (!(error instanceof PortInUseError)) throw error;
    return startDemo({ apiPort: 0, settingsPort: 0, dataDir });
  }
}

function send(url: string, token: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}` }, agent: false }, resolve);
    req.on('error', reject);
    req.end();
  });
}

async function call(
  url: string,
  token: string,
): Promise<{ status: number; wwwAuthenticate: string | undefined; body: Buffer }> {
  const res = await send(url, token);
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode ?? 0, wwwAuthenticate: res.headers['www-authenticate'], body: Buffer.concat(chunks) };
}

/** GET /events over node:http; `ended` is 'end' once the server ends the stream properly, 'aborted' if it is cut. */
async function openEvents(apiUrl: string, token: string) {
  const res = await send(`${apiUrl}/events`, token);
  cleanups.push(async () => res.destroy());
  let text = '';
  const opened = new Promise<void>((resolve) => {
    res.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n\n')) resolve();
    });
  });
  const ended = new Promise<'end' | 'aborted'>((resolve) => {
    res.once('end', () => resolve('end'));
    res.once('aborted', () => resolve('aborted'));
    res.once('error', () => resolve('aborted'));
  });
  await opened;
  return { status: res.statusCode ?? 0, text: () => text, ended };
}

describe('the demo settings page in chromium', () => {
  it('shows, copies and regenerates the token; the old token and its event stream stop at once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'launcher-auth-browser-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    // A secret of a fixed date, so that the screenshot is the same on every run; its key is random as ever.
    await new FileSecretStore(join(dataDir, 'secret.json')).save({
      id: 'settings-demo',
      key: crypto.getRandomValues(new Uint8Array(32)),
      createdAt: new Date('2026-01-15T09:30:00Z'),
    });
    const demo = await startOnDefaultPorts(dataDir);
    cleanups.push(() => demo.close());
    const { apiUrl, settingsUrl, authority, redirectFile } = demo;
    const launchUrl = demo.launchUrl;
    let rotations = 0;
    authority.onRotate(() => rotations++);

    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const context = await browser.newContext({
      viewport: { width: 1000, height: 700 },
      locale: 'en-US',
      timezoneId: 'UTC',
      colorScheme: 'light',
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: settingsUrl });
    const page = await context.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (req) => requested.push(req.url()));
    // A CSP violation (an inline script or style, an outside resource) is reported as a console error.
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    // Which resource failed, by path only (a launch link's query holds its key): the console's line names none.
    page.on('response', (response) => {
      if (response.status() >= 400 && response.status() !== 403)
        problems.push(`${response.status()} for ${new URL(response.url()).pathname}`);
    });

    // Without the launch link the page is closed: 403, and a page that says where a fresh link is (its one inline
    // style allowed by its hash: a CSP violation would show in `problems`).
    const closed = await page.goto(`${settingsUrl}/`);
    expect(closed?.status()).toBe(403);
    await page.getByRole('heading', { name: REFUSAL_TITLE }).waitFor();
    expect(await page.locator('#refused').textContent()).toContain(`Open the file ${redirectFile} in this browser`);
    expect(await context.cookies()).toEqual([]);

    // The owner opens the redirect file by its path (what `--open` hands the desktop's browser): it goes on to the
    // launch link, which trades the key for the cookie and the page key (kept in the origin's storage by the
    // launch answer's one script) and lands on / with the key gone from the URL.
    await page.goto(pathToFileURL(redirectFile).href);
    await page.getByText('Created Jan 15, 2026, 9:30 AM').waitFor();
    expect(page.url()).toBe(`${settingsUrl}/`);
    expect(requested).toContain(launchUrl);
    expect(page.url()).toBe(`${settingsUrl}/`);
    expect(await page.evaluate(() => localStorage.getItem('page-key'))).toMatch(/^[\w-]{43}$/);
    const cookies = await context.cookies();
    expect(cookies.map(({ path, httpOnly, sameSite, secure }) => ({ path, httpOnly, sameSite, secure }))).toEqual([
      { path: '/', httpOnly: true, sameSite: 'Strict', secure: false },
    ]);
    // HttpOnly: the page's own script cannot read it, so neither can anything injected into the page.
    expect(await page.evaluate(() => document.cookie)).toBe('');
    // A second tab at the plain address works too: the cookie and the kept page key are the origin's.
    const second = await context.newPage();
    await second.goto(`${settingsUrl}/`);
    await second.getByText('Created Jan 15, 2026, 9:30 AM').waitFor();
    expect(await second.locator('#status').textContent()).toBe('');
    await second.close();
    // Replayed from another browser (another user who read the link on a command line): refused, no cookie.
    const other = await browser.newContext();
    cleanups.push(() => other.close());
    const thief = await other.newPage();
    const replayed = await thief.goto(launchUrl);
    expect(replayed?.status()).toBe(403);
    await thief.getByRole('heading', { name: REFUSAL_TITLE }).waitFor();
    expect(await other.cookies()).toEqual([]);
    await thief.screenshot({ path: REFUSED_SCREENSHOT, caret: 'initial' });
    const tokenBox = page.locator('#token');
    const tryBox = page.locator('#try');
    const mask = masked(authority.issue());
    expect(await tokenBox.textContent()).toBe(mask);
    expect((await tryBox.textContent()) === `curl -H "Authorization: Bearer ${mask}" ${apiUrl}/apps`).toBe(true);
    // Masked means absent: the token is in the script's memory, not in the document.
    expect((await page.content()).includes(authority.issue())).toBe(false);
    await mkdir(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });

    // Show: the page's token is the launcher's, and the API takes it.
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const old = (await tokenBox.textContent()) ?? '';
    expect(old).toBeSameToken(authority.issue());
    const hide = page.getByRole('button', { name: 'Hide', exact: true });
    expect(await hide.getAttribute('aria-pressed')).toBe('true');
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Token copied to the clipboard.').waitFor();
    expect((await page.evaluate(() => navigator.clipboard.readText())) === old).toBe(true);
    // The "Try it" line is the real command: with the token when shown, and Copy copies it whole.
    expect((await tryBox.textContent()) === `curl -H "Authorization: Bearer ${old}" ${apiUrl}/apps`).toBe(true);
    await page.getByRole('button', { name: 'Copy the command', exact: true }).click();
    await page.getByText('Command copied to the clipboard.').waitFor();
    const command = await page.evaluate(() => navigator.clipboard.readText());
    expect(command === `curl -H "Authorization: Bearer ${old}" ${apiUrl}/apps`).toBe(true);
    // In a phone-sized window nothing of it is clipped: the command wraps, its Copy button stays in the window.
    await page.setViewportSize({ width: 360, height: 760 });
    const fits = await page.evaluate(() => {
      const box = document.querySelector('.example') as HTMLElement;
      const button = (document.getElementById('copy-try') as HTMLElement).getBoundingClientRect();
      return {
        wraps: box.scrollWidth <= box.clientWidth,
        inside: box.getBoundingClientRect().right <= innerWidth && button.right <= innerWidth,
        page: document.documentElement.scrollWidth <= innerWidth,
      };
    });
    expect(fits).toEqual({ wraps: true, inside: true, page: true });
    await page.screenshot({ path: NARROW_SCREENSHOT, fullPage: true, caret: 'initial' });
    await page.setViewportSize({ width: 1000, height: 700 });
    await hide.click();
    expect(await tokenBox.textContent()).toBe(masked(old));

    expect((await call(`${apiUrl}/apps`, old)).status).toBe(200);
    const events = await openEvents(apiUrl, old);
    expect(events.status).toBe(200);

    // Cancel changes nothing.
    const dialog = page.getByRole('dialog', { name: 'Regenerate the token?' });
    await page.getByRole('button', { name: 'Regenerate token', exact: true }).click();
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Scripts and apps that use the current token will stop working');
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(rotations).toBe(0);
    expect(authority.issue()).toBeSameToken(old);

    // Confirmed, in a window 640 pixels high: the page says so beside the token, in view, and keeps the new token
    // masked until Show.
    await page.setViewportSize({ width: 1000, height: 640 });
    await page.getByRole('button', { name: 'Regenerate token', exact: true }).click();
    await dialog.getByRole('button', { name: 'Regenerate', exact: true }).click();
    await page.getByText('New token created: the previous token no longer works.', { exact: false }).waitFor();
    const statusInView = await page.evaluate(() => {
      const box = (document.getElementById('status') as HTMLElement).getBoundingClientRect();
      return box.top >= 0 && box.bottom <= innerHeight;
    });
    expect(statusInView).toBe(true);
    expect(await tokenBox.textContent()).toBe(masked(authority.issue()));
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const fresh = (await tokenBox.textContent()) ?? '';
    expect(rotations).toBe(1);
    expect(fresh).not.toBeSameToken(old);
    expect(fresh).toBeSameToken(authority.issue());

    const refused = await call(`${apiUrl}/apps`, old);
    expect(refused.status).toBe(401);
    expect(refused.body.byteLength).toBe(0);
    expect(refused.wwwAuthenticate).toBe('Bearer realm="launcher"');
    expect((await call(`${apiUrl}/apps`, fresh)).status).toBe(200);
    expect(await events.ended).toBe('end');
    expect(events.text().endsWith('event: end\ndata: {"reason":"token-regenerated"}\n\n')).toBe(true);

    // A regeneration whose outcome the launcher cannot know yet: the page shows no token, says so, and looks again;
    // when the store's record lands (here half a second later), it shows the new token, masked until Show.
    const real = authority.rotate.bind(authority);
    let landLate = (): void => undefined;
    authority.rotate = async () => {
      landLate = () => void real();
      throw new LauncherAuthError('ERR_SAVE_UNCERTAIN', 'The outcome is not known yet.');
    };
    await page.getByRole('button', { name: 'Regenerate token', exact: true }).click();
    await dialog.getByRole('button', { name: 'Regenerate', exact: true }).click();
    await page.getByText('The secret store has not confirmed the regeneration yet', { exact: false }).waitFor();
    expect(await tokenBox.textContent()).toBe('\u2014');
    // The save lands only now, once the page has said it was not confirmed.
    landLate();
    await page.getByText('The token that works now is shown above', { exact: false }).waitFor({ timeout: 10_000 });
    // The masked form is the launcher's own, meant to be shown: no secret in a failure message.
    expect(await tokenBox.textContent()).toBe(masked(authority.issue()));
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const landed = (await tokenBox.textContent()) ?? '';
    expect(landed).toBeSameToken(authority.issue());
    expect(landed).not.toBeSameToken(fresh);
    expect(rotations).toBe(2);

    // A restart signs the browser out: the open tab, when it looks again, shows the refusal page in place of the
    // token, and so does a reload.
    const ports = { apiPort: Number(new URL(apiUrl).port), settingsPort: Number(new URL(settingsUrl).port) };
    await demo.close();
    const restarted = await startDemo({ ...ports, dataDir });
    cleanups.push(() => restarted.close());
    await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await page.getByRole('heading', { name: REFUSAL_TITLE }).waitFor();
    expect(await page.locator('#refused').textContent()).toContain(
      `Open the file ${restarted.redirectFile} in this browser`,
    );
    expect((await page.content()).includes(restarted.authority.issue())).toBe(false);
    expect(await page.locator('#token').count()).toBe(0);
    const reloaded = await page.reload();
    expect(reloaded?.status()).toBe(403);
    await page.getByRole('heading', { name: REFUSAL_TITLE }).waitFor();

    // The page loaded nothing from elsewhere, and its console reported nothing but the refusals' 403s.
    expect(requested.length).toBeGreaterThan(3);
    expect(
      requested.filter((url) => !url.startsWith(`${settingsUrl}/`) && url !== pathToFileURL(redirectFile).href),
    ).toEqual([]);
    expect(problems.filter((text) => !text.includes('status of 403'))).toEqual([]);
  });
});
