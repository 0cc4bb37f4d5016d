// FileSecretStore's compare-and-set: a save over a record this store did not load is refused, and the lock that
// makes the compare and the rename one step: a crashed holder's lock is broken, a live one waited for.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FileSecretStore } from 'launcher-auth';
import { authErrorOf, rejectionOf } from '../support/async.js';
import { until } from '../support/poll.js';
import { fixtureRecord, sameRecord } from './fixtures/records.js';

async function secretFile(): Promise<{ dir: string; path: string; lock: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-lock-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'secret.json');
  await new FileSecretStore(path).save(fixtureRecord('first'));
  return { dir, path, lock: join(dir, '.secret.json.lock') };
}

describe('FileSecretStore: compare-and-set', () => {
  it('a save over a record another store wrote since this one loaded: ERR_SAVE_CONFLICT, the other record stays', async () => {
    const { path } = await secretFile();
    const mine = new FileSecretStore(path);
    await mine.load();
    await new FileSecretStore(path).save(fixtureRecord('elsewhere'));

    const error = await authErrorOf(mine.save(fixtureRecord('mine')));
    expect([error.code, error.message]).toEqual([
      'ERR_SAVE_CONFLICT',
      `The secret file ${path} was replaced by another process since this store last read it; the new secret was not saved.`,
    ]);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('elsewhere'))).toBe(true);
    // Once it has read the other record, it saves over it; and over its own after that.
    await mine.load();
    await mine.save(fixtureRecord('mine'));
    await mine.save(fixtureRecord('again'));
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('again'))).toBe(true);
  });

  it('a removed or damaged file holds no one’s record: the save replaces it', async () => {
    const { path } = await secretFile();
    const mine = new FileSecretStore(path);
    await mine.load();
    await rm(path);
    await mine.save(fixtureRecord('after-removal'));
    await writeFile(path, '{"version":1,', { mode: 0o600 });
    await mine.save(fixtureRecord('after-damage'));
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('after-damage'))).toBe(true);
  });
});

describe('FileSecretStore: the save lock', () => {
  it('a lock whose process is gone is broken at once, and the save goes through', async () => {
    const { dir, path, lock } = await secretFile();
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(lock, `${gone}\n`, { mode: 0o600 });
    await new FileSecretStore(path).save(fixtureRecord('after-crash'));
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('after-crash'))).toBe(true);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('a lock of a live process older than 10 s is broken (a crashed holder in another container)', async () => {
    const { dir, path, lock } = await secretFile();
    await writeFile(lock, `${process.pid}\n`, { mode: 0o600 });
    const old = new Date(Date.now() - 11_000);
    await utimes(lock, old, old);
    await new FileSecretStore(path).save(fixtureRecord('after-stale'));
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('after-stale'))).toBe(true);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('a fresh lock of a live process is waited for: the save lands once it goes, or gives up when its signal aborts', async () => {
    const { dir, path, lock } = await secretFile();
    await writeFile(lock, `${process.pid}\n`, { mode: 0o600 });
    const waiting = (): Promise<boolean> => readdir(dir).then((names) => names.some((name) => name.endsWith('.tmp')));

    const controller = new AbortController();
    const given = new FileSecretStore(path).save(fixtureRecord('given-up'), { signal: controller.signal });
    expect(await until(waiting)).toBe(true);
    controller.abort(new Error('given up'));
    expect(((await rejectionOf(given)) as Error).message).toBe('given up');
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('first'))).toBe(true);

    let landed = false;
    const saved = new FileSecretStore(path).save(fixtureRecord('waited')).then(() => (landed = true));
    expect(await until(waiting)).toBe(true);
    expect(landed).toBe(false);
    await rm(lock);
    await saved;
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('waited'))).toBe(true);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });
});
