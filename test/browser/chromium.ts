// Debian's chromium, as every browser test drives it: where it is, how it starts, and one message when it is missing.
import { access, constants } from 'node:fs/promises';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Starts chromium, headless; rejects with how to install it when it is not there. */
export async function launchChromium(): Promise<Browser> {
  try {
    await access(CHROMIUM, constants.X_OK);
  } catch {
    throw new Error(
      `npm run test:browser drives Debian's chromium at ${CHROMIUM}, which is not installed here. ` +
        'Install it with `sudo apt-get install chromium` (Debian; CI does this in .ci/run), then run it again.',
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
