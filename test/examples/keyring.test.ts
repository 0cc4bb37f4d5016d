// examples/keyring.ts where there is no keychain (a Linux session without a Secret Service): it says that it
// falls back to the secret file and that the choice is permanent, and keeps the file at the next start.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { start } from '../../examples/keyring.ts';

describe.skipIf(process.platform !== 'linux')('examples/keyring.ts without a keychain', () => {
  it('says it falls back to the file for good, and where that choice is written; the next start keeps it', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'launcher-auth-keyring-example-'));
    onTestFinished(() => rm(folder, { recursive: true, force: true }));
    const bus = process.env['DBUS_SESSION_BUS_ADDRESS'];
    process.env['DBUS_SESSION_BUS_ADDRESS'] = `unix:path=${join(folder, 'no-such-bus')}`;
    onTestFinished(() => {
      if (bus === undefined) delete process.env['DBUS_SESSION_BUS_ADDRESS'];
      else process.env['DBUS_SESSION_BUS_ADDRESS'] = bus;
    });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    onTestFinished(() => warn.mockRestore());
    const service = `launcher-auth-example-${randomUUID()}`;

    const first = await start({ service, port: 0, dataDir: folder });
    onTestFinished(() => first.close());
    expect(first.kept).toBe('file');
    expect(first.secretFile).toBe(join(folder, 'secret.json'));
    expect(warn).toHaveBeenCalledTimes(1);
    const lines = String(warn.mock.calls[0]?.[0]).split('\n');
    expect(lines[0]).toMatch(/the OS keychain is not available/);
    expect(lines[1]).toBe(
      `No keychain at this first start: the secret is kept in the file ${join(folder, 'secret.json')} instead. The choice is ` +
        `permanent (recorded in ${join(folder, 'secret-store.txt')}): this launcher stays with the file even once a keychain ` +
        'is available. To choose again, stop it and delete both files; the token then changes.',
    );
    expect(await readFile(join(folder, 'secret-store.txt'), 'utf8')).toBe('file');
    const token = first.authority.issue();
    await first.close();

    // The next start reads the choice and says nothing more about it.
    const again = await start({ service, port: 0, dataDir: folder });
    onTestFinished(() => again.close());
    expect(again.kept).toBe('file');
    expect(again.authority.issue()).toBeSameToken(token);
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
