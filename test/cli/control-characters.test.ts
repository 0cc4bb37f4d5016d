// A control character in a path or an environment value never reaches a terminal or a log: a folder name reached
// through someone else's link can hold an OSC 52 clipboard write or an erase-line, and each refusal names the path.
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSecretStore, TokenAuthority, secretPath } from 'launcher-auth';
import { EXIT } from '../../src/cli/main.js';
import { authErrorOf } from '../support/async.js';
import { runCli } from './run.js';

/** Every C0 control character a file name can hold (not NUL), DEL and every C1 control character. */
const CONTROLS = [
  ...Array.from({ length: 31 }, (_, index) => index + 1),
  0x7f,
  ...Array.from({ length: 32 }, (_, index) => 0x80 + index),
].map((code) => String.fromCharCode(code));
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** The escaped form of `char` in a message. */
const escaped = (char: string): string => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
/** The printed text without its line endings, which are the CLI's own. */
const withoutLineEnds = (text: string): string => text.replaceAll(/\n(?=[^\n]|$)/g, '');

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'launcher-auth-controls-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A folder named with `char` that others may write, so that every store refuses it and names it. */
async function plantedFolder(parent: string, char: string): Promise<string> {
  const folder = join(parent, `a${char}b`);
  await mkdir(folder, { recursive: true });
  await chmod(folder, 0o777);
  return folder;
}

describe.skipIf(process.platform === 'win32')('control characters in messages', () => {
  it('a folder name with each control character: token, token --init, rotate and open() print it escaped', async () => {
    let checked = 0;
    for (const [index, char] of CONTROLS.entries()) {
      const folder = await plantedFolder(join(root, `cli-${index}`), char);
      const secret = join(folder, 'secret.json');
      for (const args of [['token'], ['token', '--init'], ['rotate']]) {
        const result = await runCli(...args, '--store', secret);
        const { out, err } = result.raw();
        expect(result.code).toBe(EXIT.store);
        expect(out).toBe('');
        expect(CONTROL.test(withoutLineEnds(err))).toBe(false);
        expect(err).toContain(`a${escaped(char)}b`);
        checked++;
      }
      const error = await authErrorOf(TokenAuthority.open({ store: new FileSecretStore(secret) }));
      expect(error.code).toBe('ERR_STORE_PERMISSIONS');
      expect(CONTROL.test(error.message)).toBe(false);
      expect(error.message).toContain(`a${escaped(char)}b`);
      checked++;
    }
    expect(checked).toBe(CONTROLS.length * 4);
  });

  it('an environment value with each control character: the path it gives, and the CLI, print it escaped', async () => {
    const saved = process.env.XDG_CONFIG_HOME;
    let checked = 0;
    try {
      for (const [index, char] of CONTROLS.entries()) {
        // secretPath() under a configuration folder named by the environment.
        process.env.XDG_CONFIG_HOME = await plantedFolder(join(root, `env-${index}`), char);
        const error = await authErrorOf(TokenAuthority.open({ store: new FileSecretStore(secretPath('app')) }));
        expect(error.code).toBe('ERR_STORE_PERMISSIONS');
        expect(CONTROL.test(error.message)).toBe(false);
        expect(error.message).toContain(`a${escaped(char)}b`);
        // A Redis URL in the environment (refused, or nothing listening on port 1).
        process.env.LAUNCHER_AUTH_CLI_TEST_URL = `redis://127.0.0.1:1${char}`;
        const result = await runCli('token', '--redis-env', 'LAUNCHER_AUTH_CLI_TEST_URL');
        expect([EXIT.usage, EXIT.store]).toContain(result.code);
        expect(CONTROL.test(withoutLineEnds(result.raw().err))).toBe(false);
        checked++;
      }
    } finally {
      if (saved === undefined) delete process.env.XDG_CONFIG_HOME;
      else process.env.XDG_CONFIG_HOME = saved;
      delete process.env.LAUNCHER_AUTH_CLI_TEST_URL;
    }
    expect(checked).toBe(CONTROLS.length);
  });
});
