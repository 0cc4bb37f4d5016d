// launcher-auth/keyring as built: loaded by import and require; the root and every other subpath load without
// @napi-rs/keyring, and the keyring store without it rejects with ERR_STORE_UNAVAILABLE; with it, on a private
// Secret Service, both formats read what the other wrote. Run by `npm run test:dist` after `npm run build`.
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { secretServiceMissing, servicesRequired, useSecretService } from '../support/secret-service.js';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'dist');

describe('launcher-auth/keyring in dist/', () => {
  it('resolves to dist/keyring.{js,cjs} and exports KeyringSecretStore in both formats', async () => {
    expect(require.resolve('launcher-auth/keyring')).toBe(join(DIST, 'keyring.cjs'));
    expect(import.meta.resolve('launcher-auth/keyring')).toBe(pathToFileURL(join(DIST, 'keyring.js')).href);
    const esm = await import('launcher-auth/keyring');
    const cjs = require('launcher-auth/keyring') as typeof esm;
    for (const format of [esm, cjs]) {
      expect(typeof format.KeyringSecretStore).toBe('function');
      expect(() => new format.KeyringSecretStore({ service: '', account: 'a' })).toThrow(/`service`/);
    }
  });

  it('without @napi-rs/keyring: every entry loads, and the store rejects with ERR_STORE_UNAVAILABLE saying so', () => {
    // A child process in which resolving @napi-rs/keyring fails, as when the optional peer is not installed.
    const script = `
      import Module, { createRequire, register } from 'node:module';
      const blocked = (request) => request === '@napi-rs/keyring' || request.startsWith('@napi-rs/keyring/');
      const original = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (blocked(request)) throw Object.assign(new Error('not installed'), { code: 'MODULE_NOT_FOUND' });
        return original.call(this, request, ...rest);
      };
      register('data:text/javascript,' + encodeURIComponent(
        'export async function resolve(s, c, n) { if (s.startsWith("@napi-rs/keyring")) throw Object.assign(new Error("not installed"), { code: "ERR_MODULE_NOT_FOUND" }); return n(s, c); }'));
      const require = createRequire(process.cwd() + '/');
      const names = ['', '/node', '/express', '/fastify', '/fetch', '/testing', '/keyring'];
      for (const name of names) { await import('launcher-auth' + name); require('launcher-auth' + name); }
      const root = await import('launcher-auth');
      const codes = [];
      for (const { KeyringSecretStore } of [await import('launcher-auth/keyring'), require('launcher-auth/keyring')]) {
        const error = await new KeyringSecretStore({ service: 's', account: 'a' }).load().then(() => undefined, (e) => e);
        codes.push(root.isLauncherAuthError(error, 'ERR_STORE_UNAVAILABLE') && error.message.includes('@napi-rs/keyring is not installed'));
      }
      console.log(JSON.stringify(codes));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(child.stderr).toBe('');
    expect(child.stdout.trim()).toBe('[true,true]');
  });
});

const missing = secretServiceMissing();

describe.skipIf(missing !== undefined && !servicesRequired)(
  `launcher-auth/keyring in dist/ on a real Secret Service${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    useSecretService();

    it('what the import build saves, the require build loads', async () => {
      const esm = await import('launcher-auth/keyring');
      const cjs = require('launcher-auth/keyring') as typeof esm;
      const entry = { service: `launcher-auth-dist-${randomUUID()}`, account: 'automation' };
      const record = { id: 'dist', key: new Uint8Array(randomBytes(32)), createdAt: new Date('2026-01-02T03:04:05.678Z') };
      await new esm.KeyringSecretStore(entry).save(record);
      const loaded = await new cjs.KeyringSecretStore(entry).load();
      expect(loaded?.id).toBe('dist');
      expect(loaded?.createdAt.getTime()).toBe(record.createdAt.getTime());
      expect(Buffer.from(loaded?.key ?? []).equals(Buffer.from(record.key))).toBe(true);
    });
  },
);
