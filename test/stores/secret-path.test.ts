// secretPath(): the user's configuration folder whatever the working directory, XDG's rules on Linux, and names
// that cannot steer the path elsewhere.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { secretPath } from 'launcher-auth';

function withXdg(value: string | undefined): void {
  const before = process.env['XDG_CONFIG_HOME'];
  if (value === undefined) delete process.env['XDG_CONFIG_HOME'];
  else process.env['XDG_CONFIG_HOME'] = value;
  onTestFinished(() => {
    if (before === undefined) delete process.env['XDG_CONFIG_HOME'];
    else process.env['XDG_CONFIG_HOME'] = before;
  });
}

describe.runIf(process.platform === 'linux')('secretPath() on Linux', () => {
  it('is under an absolute XDG_CONFIG_HOME', () => {
    withXdg('/srv/config');
    expect(secretPath('my-launcher')).toBe('/srv/config/my-launcher/secret.json');
    expect(secretPath('my-launcher', 'api.secret')).toBe('/srv/config/my-launcher/api.secret');
  });

  it.each([undefined, '', 'relative/config'])('is under ~/.config when XDG_CONFIG_HOME is %j', (value) => {
    withXdg(value);
    expect(secretPath('my-launcher')).toBe(join(homedir(), '.config', 'my-launcher', 'secret.json'));
  });

  it('does not depend on the working directory', () => {
    withXdg(undefined);
    const first = secretPath('my-launcher');
    const cwd = process.cwd();
    process.chdir('/');
    onTestFinished(() => process.chdir(cwd));
    expect(secretPath('my-launcher')).toBe(first);
  });
});

describe('secretPath() names', () => {
  it.each(['', '.', '..', 'a/b', 'a\\b', '../x', 'a\0b'])(
    'refuses the app name %j with a TypeError naming `app`',
    (app) => {
      expect(() => secretPath(app)).toThrow(
        new TypeError('secretPath: `app` must be a folder name (no slash, not "." or "..").'),
      );
    },
  );

  it('refuses a file name that is a path with a TypeError naming `fileName`', () => {
    expect(() => secretPath('my-launcher', '../secret.json')).toThrow(/`fileName`/);
    expect(() => secretPath(42 as unknown as string)).toThrow(/`app`/);
  });
});
