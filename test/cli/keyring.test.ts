// The launcher-auth command with --keyring <service>/<account>, in-process through main(), on a private Secret
// Service (test/support/secret-service.ts). Every test also proves that no output held the entry's key.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority } from 'launcher-auth';
import { KeyringSecretStore } from 'launcher-auth/keyring';
import { EXIT, main } from '../../src/cli/main.js';
import { until } from '../support/async.js';
import {
  secretServiceMissing,
  servicesRequired,
  useSecretService,
  type SecretService,
} from '../support/secret-service.js';

const missing = secretServiceMissing();
const JWT_SHAPED = /[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/g;
let outputs: string[] = [];
const keys = new Set<string>();
/** Reads the key the entry holds now (to check outputs against), or nothing; set by the suite below. */
let rememberKey = (): void => undefined;

afterEach(() => {
  rememberKey();
  const spellings = [...keys].flatMap((key) => {
    const bytes = Buffer.from(key, 'base64url');
    return [key, bytes.toString('base64'), bytes.toString('hex')];
  });
  // A boolean, so that a leak is not itself printed by the failing assertion.
  expect(outputs.some((text) => spellings.some((spelling) => text.includes(spelling)))).toBe(false);
  outputs = [];
});

/** What a command printed, JWT-shaped strings replaced by `<token>`; `raw()` for comparisons ending in a boolean. */
async function run(...argv: string[]): Promise<{ code: number; out: string; err: string; raw(): string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { stdout: (text) => void (out += text), stderr: (text) => void (err += text) });
  outputs.push(out, err);
  rememberKey();
  const redact = (text: string): string => text.replace(JWT_SHAPED, '<token>');
  return { code, out: redact(out), err: redact(err), raw: () => out };
}

describe('launcher-auth --keyring: usage', () => {
  it.each([
    [['token', '--store', 'x.json', '--keyring', 's/a'], 'give one of --store, --keyring or --redis, not several.'],
    [['token', '--keyring', 'service-only'], '--keyring must be <service>/<account>.'],
    [['rotate', '--keyring', '/account'], '--keyring must be <service>/<account>.'],
    [['rotate', '--keyring', 'service/'], '--keyring must be <service>/<account>.'],
    [
      ['token', '--keyring', 's/a\tb'],
      '--keyring: `account` must be a string of 1 to 256 characters without control characters.',
    ],
  ])('%j is a usage error', async (argv, message) => {
    const { code, out, err } = await run(...argv);
    expect(code).toBe(EXIT.usage);
    expect(out).toBe('');
    expect(err).toBe(`launcher-auth: ${message} See launcher-auth --help.\n`);
  });
});

describe.skipIf(missing !== undefined && !servicesRequired)(
  `launcher-auth --keyring on a real Secret Service${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    const running = useSecretService();
    let service: SecretService;
    let entry = { service: '', account: 'automation' };

    beforeAll(() => {
      service = running();
      rememberKey = () => {
        if (entry.service === '') return;
        const found = service.run('secret-tool', ['lookup', 'service', entry.service, 'username', entry.account]);
        try {
          const { key } = JSON.parse(found.stdout) as { key?: unknown };
          if (typeof key === 'string' && key.length >= 43) keys.add(key);
        } catch {
          // No entry, or one a test damaged on purpose: no key to look for.
        }
      };
    });
    afterAll(() => {
      rememberKey = () => undefined;
    });

    function freshEntry(): string {
      entry = { service: `launcher-auth-cli-${randomUUID()}`, account: 'automation' };
      return `${entry.service}/${entry.account}`;
    }

    it('token without --init: no entry is a store error naming it; with --init the token the library issues', async () => {
      const spec = freshEntry();
      const none = await run('token', '--keyring', spec);
      expect(none).toMatchObject({ code: EXIT.store, out: '' });
      expect(none.err).toBe(
        `launcher-auth: no secret in the keychain for service "${entry.service}", account "automation" (use --init to create one).\n`,
      );
      const first = await run('token', '--keyring', spec, '--init');
      expect(first).toMatchObject({ code: EXIT.ok, out: '<token>\n', err: '' });
      const authority = await TokenAuthority.open({ store: new KeyringSecretStore(entry) });
      onTestFinished(() => authority.close());
      expect(first.raw()).toBeSameToken(`${authority.issue()}\n`);
      const again = await run('token', '--keyring', spec);
      expect(again.raw() === first.raw()).toBe(true);
    });

    it('rotate: a launcher running on the same entry follows within its poll interval; the old token is refused', async () => {
      const spec = freshEntry();
      const none = await run('rotate', '--keyring', spec);
      expect(none.err).toContain(`(create one with: launcher-auth token --keyring ${spec} --init)`);
      await run('token', '--keyring', spec, '--init');
      const running = await TokenAuthority.open({ store: new KeyringSecretStore({ ...entry, pollInterval: 100 }) });
      onTestFinished(() => running.close());
      const old = running.issue();
      const rotated = await run('rotate', '--keyring', spec);
      expect(rotated).toMatchObject({ code: EXIT.ok, out: '<token>\n', err: '' });
      const token = rotated.raw().trim();
      expect(await until(() => running.issue() !== old, 15_000, 20)).toBe(true);
      expect(running.issue()).toBeSameToken(token);
      expect(await running.verify(old)).toEqual({ ok: false, reason: 'rotated' });
    });

    it('no Secret Service: exit 3 with the coded message that points to FileSecretStore', async () => {
      process.env.DBUS_SESSION_BUS_ADDRESS = `unix:path=${join(service.home, 'no-such-bus')}`;
      onTestFinished(() => {
        process.env.DBUS_SESSION_BUS_ADDRESS = service.address;
      });
      const spec = freshEntry();
      const { code, out, err } = await run('token', '--keyring', spec, '--init');
      expect(code).toBe(EXIT.store);
      expect(out).toBe('');
      expect(err).toMatch(
        new RegExp(
          `^launcher-auth: Cannot read the keychain entry \\(service "${entry.service}", account "automation"\\): the OS keychain is not available \\(Platform failure: .*\\)\\. .*FileSecretStore instead\\.\\n$`,
        ),
      );
    });
  },
);
