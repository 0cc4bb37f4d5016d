// FileSecretStore against a path that another user keeps changing: a symbolic link of theirs in a sticky
// world-writable folder, re-pointed at an older private folder of the victim's and removed, again and again, by a
// racer process running as that other user while the store loads and saves. Every trial is counted by outcome;
// none may read from, or write into, the other folder. Root only: the racer must be another user (uid 65534).
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FileSecretStore, isLauncherAuthError } from 'launcher-auth';
import { fixtureRecord, sameRecord } from './fixtures/records.js';

const IS_ROOT = process.getuid?.() === 0;
const NOBODY = 65534;
const TRIALS = 300;

/** The other user's loop: link, unlink, as fast as it can, until its stdin closes; then how many times. */
const RACER = `
const { symlinkSync, unlinkSync } = require('node:fs');
const [target, link] = process.argv.slice(1);
let toggles = 0;
let stop = false;
process.stdin.on('end', () => { stop = true; }).resume();
process.stdout.write('ready\\n');
(function loop() {
  for (let i = 0; i < 200; i++) {
    try { symlinkSync(target, link); toggles++; } catch {}
    try { unlinkSync(link); } catch {}
  }
  if (stop) process.stdout.write('toggles ' + toggles + '\\n');
  else setImmediate(loop);
})();
`;

describe.runIf(IS_ROOT && process.platform !== 'win32')('FileSecretStore: a link raced by another user', () => {
  it(`${TRIALS} toggling trials: 0 loads from, 0 writes into another folder`, { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-race-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    await chmod(dir, 0o755);
    const sticky = join(dir, 'sticky');
    await mkdir(sticky);
    await chmod(sticky, 0o1777);
    // The victim's other private folder, with an older secret in it.
    const older = join(dir, 'older');
    await new FileSecretStore(join(older, 'secret.json')).save(fixtureRecord('older'));
    const olderBytes = await readFile(join(older, 'secret.json'));
    const link = join(sticky, 'launcher');
    const path = join(link, 'secret.json');

    const racer = spawn(process.execPath, ['-e', RACER, older, link], {
      uid: NOBODY,
      gid: NOBODY,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let output = '';
    racer.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => racer.once('exit', resolve));
    onTestFinished(async () => {
      if (racer.exitCode === null) racer.kill('SIGKILL');
      await exited;
    });
    await expect.poll(() => output, { timeout: 30_000 }).toContain('ready\n');

    const outcomes = { loadedOlder: 0, wroteOlder: 0, refused: 0, nothing: 0, saved: 0, saveRefused: 0, other: 0 };
    for (let trial = 0; trial < TRIALS; trial++) {
      try {
        const loaded = await new FileSecretStore(path).load();
        if (loaded === undefined) outcomes.nothing++;
        else if (sameRecord(loaded, fixtureRecord('older'))) outcomes.loadedOlder++;
        else outcomes.other++;
      } catch (error) {
        if (isLauncherAuthError(error, 'ERR_STORE_PERMISSIONS') || isLauncherAuthError(error, 'ERR_STORE_IO'))
          outcomes.refused++;
        else outcomes.other++;
      }
      try {
        await new FileSecretStore(path).save(fixtureRecord(`trial-${trial}`));
        outcomes.saved++;
      } catch (error) {
        if (isLauncherAuthError(error, 'ERR_STORE_PERMISSIONS') || isLauncherAuthError(error, 'ERR_STORE_IO'))
          outcomes.saveRefused++;
        else outcomes.other++;
      }
      if (!(await readFile(join(older, 'secret.json'))).equals(olderBytes)) {
        outcomes.wroteOlder++;
        await new FileSecretStore(join(older, 'secret.json')).save(fixtureRecord('older'));
      }
      // A save that found the name free made it a folder of the victim's: free it for the racer again.
      await rm(link, { recursive: true, force: true }).catch(() => undefined);
    }
    racer.stdin.end();
    expect(await exited).toBe(0);
    const toggles = Number(/toggles (\d+)/.exec(output)?.[1] ?? 0);

    expect({ loadedOlder: outcomes.loadedOlder, wroteOlder: outcomes.wroteOlder, other: outcomes.other }).toEqual({
      loadedOlder: 0,
      wroteOlder: 0,
      other: 0,
    });
    expect(outcomes.nothing + outcomes.refused).toBe(TRIALS);
    expect(outcomes.saved + outcomes.saveRefused).toBe(TRIALS);
    // The race took place: the racer linked, and loads met its link.
    expect(toggles).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});
